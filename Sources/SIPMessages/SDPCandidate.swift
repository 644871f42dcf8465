import Foundation

/// The type of an ICE candidate (RFC 8445 §5.1.1, RFC 8839 §5.1): where its address comes from.
public enum SDPCandidateType: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    /// An address of the writer's own interface.
    case host
    /// Server reflexive: the writer's address as a STUN server saw it (its NAT's outside address).
    case srflx
    /// Peer reflexive: an address learnt from a connectivity check.
    case prflx
    /// Relayed: an address on a TURN server.
    case relay

    /// The type named `name`, in any case (RFC 8839's grammar writes the names as case-insensitive literals).
    public init?(name: some StringProtocol) {
        guard let type = Self.allCases.first(where: { $0.rawValue.caseInsensitiveEquals(name) }) else { return nil }
        self = type
    }

    /// The name as `a=candidate` writes it.
    public var description: String { rawValue }
}

/// One UDP ICE candidate, an `a=candidate` attribute (RFC 8839 §5.1): a transport address the writer can receive on,
/// with what connectivity checks need to rank and pair it.
///
/// Only what Parley can use is a value: UDP (TCP candidates, RFC 6544, are skipped) at an IPv4 or IPv6 literal (FQDN
/// and mDNS `.local` candidates are skipped). Extension pairs (`generation 0`, `network-id 1`, `ufrag …`) are ignored.
/// A candidate is a valid value whatever its address; ``isUsable`` says whether media can be sent to it.
public struct SDPCandidate: Sendable, Hashable, CustomStringConvertible {
    /// The foundation: 1 to 32 ice-chars (ALPHA / DIGIT / "+" / "/"); candidates alike share one (RFC 8445 §5.1.1.3).
    public let foundation: String
    /// The component: 1 to 256 (1 is RTP, 2 is RTCP when it is not multiplexed).
    public let component: Int
    /// The priority (RFC 8445 §5.1.2): the higher, the more preferred.
    public let priority: UInt32
    /// The IPv4 or IPv6 address, in its canonical text (inet_ntop's: `2001:db8::1`, never in brackets).
    public let address: String
    /// The UDP port, 1 to 65535.
    public let port: Int
    /// The type.
    public let type: SDPCandidateType
    /// The related address (`raddr`): for a reflexive or relayed candidate, the address it was derived from; nil
    /// when absent (always together with ``relatedPort``). Informational only: never checked, never sent to.
    public let relatedAddress: String?
    /// The related port (`rport`), 0 to 65535 (Chrome writes `raddr 0.0.0.0 rport 0` to hide its host address).
    public let relatedPort: Int?

    /// The highest component RFC 8839 allows.
    public static let maximumComponent = 256
    /// The longest foundation RFC 8839 allows.
    public static let maximumFoundationLength = 32
    /// The longest attribute value read: anything longer is refused before it is examined (Chrome's longest lines,
    /// with a 256-character ufrag extension, stay far below).
    public static let maximumLength = 1_024

    /// A candidate; nil when the foundation is not 1–32 ice-chars, the component not 1–256, the port not 1–65535, the
    /// address not an IPv4 or IPv6 literal, or the related pair incomplete or invalid (an IP literal, port 0–65535).
    public init?(
        foundation: String, component: Int, priority: UInt32, address: String, port: Int, type: SDPCandidateType,
        relatedAddress: String? = nil, relatedPort: Int? = nil
    ) {
        guard ICEChars.isValid(foundation, length: 1...Self.maximumFoundationLength),
            (1...Self.maximumComponent).contains(component), (1...65_535).contains(port),
            let canonical = IPLiteral(address)?.text, (relatedAddress == nil) == (relatedPort == nil)
        else { return nil }
        var related: String?
        if let relatedAddress, let relatedPort {
            guard (0...65_535).contains(relatedPort), let text = IPLiteral(relatedAddress)?.text else { return nil }
            related = text
        }
        self.foundation = foundation
        self.component = component
        self.priority = priority
        self.address = canonical
        self.port = port
        self.type = type
        self.relatedAddress = related
        self.relatedPort = related == nil ? nil : relatedPort
    }

    /// Reads the value of an `a=candidate` attribute (the text after `candidate:`): `<foundation> <component>
    /// <transport> <priority> <address> <port> typ <type> [raddr <address> rport <port>] [<name> <value>]…`, fields
    /// separated by spaces or tabs, names in any case.
    ///
    /// Nil (the line skipped) for a malformed line or one longer than ``maximumLength``, a transport other than UDP,
    /// an address that is not an IP literal, a type Parley does not know, and any value out of range. A related
    /// address that is not an IP literal, or a `raddr` without its `rport`, is left out and the candidate kept.
    /// Extension pairs are passed over. Reading walks the line once and keeps nothing of it but the fields above.
    public init?(attributeValue value: some StringProtocol) {
        guard value.utf8.count <= Self.maximumLength else { return nil }
        var text = String(value)
        guard let candidate = text.withUTF8({ Self.read($0) }) else { return nil }
        self = candidate
    }

    /// The attribute's value as `a=candidate:` writes it: transport `UDP`, the type's name, the related pair if any.
    public var attributeValue: String {
        var value = "\(foundation) \(component) UDP \(priority) \(address) \(port) typ \(type.rawValue)"
        if let relatedAddress, let relatedPort { value += " raddr \(relatedAddress) rport \(relatedPort)" }
        return value
    }

    /// The attribute's value (candidates are not secret).
    public var description: String { attributeValue }

    /// Whether media can be sent to it: false when its address is unspecified (0.0.0.0/8, `::`), multicast (224/4,
    /// ff00::/8), the broadcast 255.255.255.255 or link-local (169.254/16, fe80::/10), IPv4-mapped IPv6 addresses
    /// judged by their IPv4 address. Loopback (127/8, `::1`) is usable. (A port of 0 cannot be a candidate's at all.)
    /// Reading a description drops the unusable ones (``SDPICE/droppedCandidates`` counts them); the engine can ask
    /// the same of its own candidates before it offers them.
    public var isUsable: Bool { IPLiteral(address)?.isUsable ?? false }

    /// The candidate in `line`, or nil (the rules of ``init(attributeValue:)``).
    private static func read(_ line: UnsafeBufferPointer<UInt8>) -> SDPCandidate? {
        var fields = SDPFieldScanner(line)
        guard let foundation = fields.next(), ICEChars.isValid(line[foundation], length: 1...maximumFoundationLength),
            let componentField = fields.next(), let component = decimal(line[componentField], digits: 3),
            (1...maximumComponent).contains(component),
            let transport = fields.next(), line[transport].caseInsensitiveEquals("udp"),
            let priorityField = fields.next(), let priority = decimal(line[priorityField], digits: 10),
            priority <= Int(UInt32.max),
            let addressField = fields.next(), let address = IPLiteral(line[addressField]),
            let portField = fields.next(), let port = decimal(line[portField], digits: 5), (1...65_535).contains(port),
            let typ = fields.next(), line[typ].caseInsensitiveEquals("typ"),
            let typeField = fields.next(), let type = SDPCandidateType(bytes: line[typeField])
        else { return nil }
        var relatedAddress: IPLiteral??
        var relatedPort: Int??
        while let name = fields.next(), let extensionValue = fields.next() {
            if relatedAddress == nil, line[name].caseInsensitiveEquals("raddr") {
                relatedAddress = .some(IPLiteral(line[extensionValue]))
            } else if relatedPort == nil, line[name].caseInsensitiveEquals("rport") {
                relatedPort = .some(decimal(line[extensionValue], digits: 5).flatMap { $0 <= 65_535 ? $0 : nil })
            }
        }
        let related = relatedAddress.flatMap { $0 }.flatMap { address in relatedPort.flatMap { $0 }.map { (address, $0) } }
        return SDPCandidate(
            foundation: String(decoding: line[foundation], as: UTF8.self), component: component,
            priority: UInt32(priority), canonicalAddress: address.text, port: port, type: type,
            relatedAddress: related?.0.text, relatedPort: related?.1)
    }

    /// A candidate from fields already checked.
    private init(
        foundation: String, component: Int, priority: UInt32, canonicalAddress: String, port: Int, type: SDPCandidateType,
        relatedAddress: String?, relatedPort: Int?
    ) {
        self.foundation = foundation
        self.component = component
        self.priority = priority
        self.address = canonicalAddress
        self.port = port
        self.type = type
        self.relatedAddress = relatedAddress
        self.relatedPort = relatedPort
    }

    /// 1 to `digits` decimal digits, as a number.
    private static func decimal(_ bytes: Slice<UnsafeBufferPointer<UInt8>>, digits: Int) -> Int? {
        guard (1...digits).contains(bytes.count) else { return nil }
        var value = 0
        for byte in bytes {
            guard byte >= 0x30 && byte <= 0x39 else { return nil }
            value = value * 10 + Int(byte - 0x30)
        }
        return value
    }
}

extension SDPCandidateType {
    /// The type named by `bytes`, in any case.
    fileprivate init?(bytes: Slice<UnsafeBufferPointer<UInt8>>) {
        guard let type = Self.allCases.first(where: { bytes.caseInsensitiveEquals($0.rawValue) }) else { return nil }
        self = type
    }
}

extension Slice<UnsafeBufferPointer<UInt8>> {
    /// Whether the bytes spell `text` (ASCII), letters compared without regard to case.
    fileprivate func caseInsensitiveEquals(_ text: String) -> Bool {
        count == text.utf8.count && zip(self, text.utf8).allSatisfy { Self.lowercased($0) == Self.lowercased($1) }
    }

    private static func lowercased(_ byte: UInt8) -> UInt8 {
        byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z") ? byte + 32 : byte
    }
}

/// RFC 8839's ice-char: ALPHA / DIGIT / "+" / "/" (ufrag, pwd, foundations, ice-options tags).
enum ICEChars {
    /// Whether `byte` is an ice-char.
    static func isICEChar(_ byte: UInt8) -> Bool {
        SIPSyntax.isAlphanumeric(byte) || byte == UInt8(ascii: "+") || byte == UInt8(ascii: "/")
    }

    /// Whether `text` is `length` ice-chars.
    static func isValid(_ text: some StringProtocol, length: ClosedRange<Int>) -> Bool {
        length.contains(text.utf8.count) && SIPSyntax.allBytes(text, isICEChar)
    }

    /// Whether `bytes` are `length` ice-chars.
    static func isValid(_ bytes: Slice<UnsafeBufferPointer<UInt8>>, length: ClosedRange<Int>) -> Bool {
        length.contains(bytes.count) && bytes.allSatisfy(isICEChar)
    }
}

/// The fields of a line separated by spaces or tabs, as ranges of its bytes, found one at a time: nothing is built.
struct SDPFieldScanner {
    private let line: UnsafeBufferPointer<UInt8>
    private var position = 0

    /// A scanner at the start of `line`.
    init(_ line: UnsafeBufferPointer<UInt8>) {
        self.line = line
    }

    /// The next field's range, or nil at the end of the line.
    mutating func next() -> Range<Int>? {
        while position < line.count, SIPSyntax.isWhitespace(line[position]) { position += 1 }
        guard position < line.count else { return nil }
        let start = position
        while position < line.count, !SIPSyntax.isWhitespace(line[position]) { position += 1 }
        return start..<position
    }
}

/// An IPv4 or IPv6 address literal, read by inet_pton (dotted quad without leading zeros; RFC 4291 text without
/// brackets or zone) and written back by inet_ntop.
struct IPLiteral {
    /// The address: 4 bytes for IPv4, 16 for IPv6, in network order.
    let bytes: [UInt8]

    /// The longest text read: INET6_ADDRSTRLEN less its NUL (`ffff:…:255.255.255.255`).
    static let maximumLength = 45

    /// The address `text` spells, or nil.
    init?(_ text: some StringProtocol) {
        var copy = String(text)
        guard let bytes = copy.withUTF8({ Self.parse($0) }) else { return nil }
        self.bytes = bytes
    }

    /// The address `bytes` spell, or nil.
    init?(_ bytes: Slice<UnsafeBufferPointer<UInt8>>) {
        guard let parsed = Self.parse(UnsafeBufferPointer(rebasing: bytes)) else { return nil }
        self.bytes = parsed
    }

    private static func parse(_ text: UnsafeBufferPointer<UInt8>) -> [UInt8]? {
        guard (1...maximumLength).contains(text.count) else { return nil }
        let isIPv6 = text.contains(UInt8(ascii: ":"))
        return withUnsafeTemporaryAllocation(of: CChar.self, capacity: maximumLength + 1) { cText in
            for (index, byte) in text.enumerated() { cText[index] = CChar(bitPattern: byte) }
            cText[text.count] = 0
            var address = [UInt8](repeating: 0, count: isIPv6 ? 16 : 4)
            let status = address.withUnsafeMutableBytes { inet_pton(isIPv6 ? AF_INET6 : AF_INET, cText.baseAddress!, $0.baseAddress) }
            return status == 1 ? address : nil
        }
    }

    /// The canonical text (inet_ntop's).
    var text: String {
        withUnsafeTemporaryAllocation(of: CChar.self, capacity: Self.maximumLength + 1) { cText in
            let written = bytes.withUnsafeBytes {
                inet_ntop(bytes.count == 16 ? AF_INET6 : AF_INET, $0.baseAddress, cText.baseAddress!, socklen_t(cText.count))
            }
            return written == nil ? "" : String(cString: cText.baseAddress!)
        }
    }

    /// Whether media can be sent to it (``SDPCandidate/isUsable``).
    var isUsable: Bool {
        if bytes.count == 16 {
            if bytes[0..<10].allSatisfy({ $0 == 0 }), bytes[10] == 0xFF, bytes[11] == 0xFF {
                return IPLiteral(mappedIPv4: Array(bytes[12...])).isUsable
            }
            let unspecified = bytes.allSatisfy { $0 == 0 }
            let multicast = bytes[0] == 0xFF
            let linkLocal = bytes[0] == 0xFE && bytes[1] & 0xC0 == 0x80
            return !unspecified && !multicast && !linkLocal
        }
        let thisNetwork = bytes[0] == 0
        let multicast = bytes[0] & 0xF0 == 0xE0
        let broadcast = bytes.allSatisfy { $0 == 0xFF }
        let linkLocal = bytes[0] == 169 && bytes[1] == 254
        return !thisNetwork && !multicast && !broadcast && !linkLocal
    }

    private init(mappedIPv4 bytes: [UInt8]) {
        self.bytes = bytes
    }
}
