import Foundation
import Glibc
import ParleyIO
import Testing

/// A STUN message (RFC 8489) as the tests write and read it: a type, a transaction ID and attributes, with
/// MESSAGE-INTEGRITY (short-term credentials, HMAC-SHA1) and FINGERPRINT (CRC-32) computed as ICE agents expect; or
/// a classic RFC 3489 one (no magic cookie: a 16-byte transaction ID), as libnice's Binding requests to a STUN server
/// are. Written from the RFCs, independently of libnice; `STUNTests` checks it against RFC 5769's sample request.
struct STUNMessage {
    /// A Binding request, its success response and its error response.
    static let bindingRequest: UInt16 = 0x0001, bindingSuccess: UInt16 = 0x0101, bindingError: UInt16 = 0x0111
    /// Attribute types.
    static let mappedAddress: UInt16 = 0x0001, username: UInt16 = 0x0006, messageIntegrity: UInt16 = 0x0008
    static let errorCode: UInt16 = 0x0009
    static let xorMappedAddress: UInt16 = 0x0020, priority: UInt16 = 0x0024, software: UInt16 = 0x8022
    static let fingerprint: UInt16 = 0x8028, iceControlled: UInt16 = 0x8029, iceControlling: UInt16 = 0x802A
    /// RFC 5389's magic cookie.
    static let magicCookie: [UInt8] = [0x21, 0x12, 0xA4, 0x42]

    /// The message type.
    var type: UInt16
    /// The transaction ID: 12 bytes after the magic cookie, or 16 in place of both (RFC 3489).
    var transactionID: [UInt8]
    /// The attributes before MESSAGE-INTEGRITY and FINGERPRINT, in order.
    var attributes: [(type: UInt16, value: [UInt8])]

    /// A message; a fresh random transaction ID unless one is given.
    init(type: UInt16, transactionID: [UInt8] = SecureRandom.bytes(12), attributes: [(type: UInt16, value: [UInt8])] = []) {
        (self.type, self.transactionID, self.attributes) = (type, transactionID, attributes)
    }

    /// The message's bytes: its attributes (values padded to 4 bytes with `padding`), then MESSAGE-INTEGRITY keyed by
    /// `password` when given (RFC 8489 §9.1.1: the short-term password as the key), then FINGERPRINT when asked.
    func encoded(integrity password: String? = nil, fingerprint: Bool = true, padding: UInt8 = 0) -> [UInt8] {
        var body: [UInt8] = []
        for (type, value) in attributes { body += Self.attribute(type, value, padding: padding) }
        // Each trailer is computed over the message so far, its header's length already counting the trailer.
        if let password {
            let covered = Self.header(type, length: body.count + 24, transactionID) + body
            body += Self.attribute(Self.messageIntegrity, Self.hmacSHA1(key: Array(password.utf8), covered))
        }
        if fingerprint {
            let covered = Self.header(type, length: body.count + 8, transactionID) + body
            body += Self.attribute(Self.fingerprint, Self.bigEndian(Self.crc32(covered) ^ 0x5354_554E))
        }
        return Self.header(type, length: body.count, transactionID) + body
    }

    /// Whether it is an RFC 3489 message (no magic cookie).
    var isClassic: Bool { transactionID.count == 16 }

    /// Reads a message; nil when `bytes` is not one (too short, a length that is not its own, attributes overrunning
    /// it). Without the magic cookie it is read as RFC 3489's.
    init?(_ bytes: [UInt8]) {
        guard bytes.count >= 20, bytes[0] & 0xC0 == 0 else { return nil }
        let length = Int(bytes[2]) << 8 | Int(bytes[3])
        guard bytes.count == 20 + length else { return nil }
        type = UInt16(bytes[0]) << 8 | UInt16(bytes[1])
        transactionID = Array(bytes[4..<8]) == Self.magicCookie ? Array(bytes[8..<20]) : Array(bytes[4..<20])
        attributes = []
        var offset = 20
        while offset + 4 <= bytes.count {
            let kind = UInt16(bytes[offset]) << 8 | UInt16(bytes[offset + 1])
            let size = Int(bytes[offset + 2]) << 8 | Int(bytes[offset + 3])
            guard offset + 4 + size <= bytes.count else { return nil }
            attributes.append((kind, Array(bytes[(offset + 4)..<(offset + 4 + size)])))
            offset += 4 + (size + 3) / 4 * 4
        }
    }

    /// The first attribute of `type`'s value.
    func attribute(_ type: UInt16) -> [UInt8]? { attributes.first { $0.type == type }?.value }

    /// ERROR-CODE's code (class × 100 + number), when it has one.
    var errorStatus: Int? {
        guard let value = attribute(Self.errorCode), value.count >= 4 else { return nil }
        return Int(value[2] & 0x07) * 100 + Int(value[3])
    }

    /// XOR-MAPPED-ADDRESS for IPv4 (an address and a port).
    var xorMapping: (address: String, port: Int)? {
        guard let value = attribute(Self.xorMappedAddress), value.count == 8, value[1] == 0x01 else { return nil }
        let port = (Int(value[2] ^ Self.magicCookie[0]) << 8) | Int(value[3] ^ Self.magicCookie[1])
        let octets = (0..<4).map { String(value[4 + $0] ^ Self.magicCookie[$0]) }
        return (octets.joined(separator: "."), port)
    }

    /// An XOR-MAPPED-ADDRESS value for an IPv4 `address` and `port`.
    static func xorMapped(_ address: String, port: Int) -> [UInt8] {
        let plain = mapped(address, port: port)
        // The port with the cookie's first two bytes, the address with all four.
        return Array(plain[0..<2]) + (0..<2).map { plain[2 + $0] ^ magicCookie[$0] } + (0..<4).map { plain[4 + $0] ^ magicCookie[$0] }
    }

    /// A MAPPED-ADDRESS value (RFC 3489's, unmasked) for an IPv4 `address` and `port`.
    static func mapped(_ address: String, port: Int) -> [UInt8] {
        let octets = address.split(separator: ".").compactMap { UInt8($0) }
        precondition(octets.count == 4, "an IPv4 address: \(address)")
        return [0, 0x01, UInt8(port >> 8), UInt8(port & 0xFF)] + octets
    }

    /// `value` as four bytes, most significant first.
    static func bigEndian(_ value: UInt32) -> [UInt8] { [24, 16, 8, 0].map { UInt8((value >> $0) & 0xFF) } }

    /// A message header: type, length, magic cookie (unless the ID is RFC 3489's), transaction ID.
    private static func header(_ type: UInt16, length: Int, _ transactionID: [UInt8]) -> [UInt8] {
        [UInt8(type >> 8), UInt8(type & 0xFF), UInt8(length >> 8), UInt8(length & 0xFF)]
            + (transactionID.count == 16 ? [] : magicCookie) + transactionID
    }

    /// One attribute, its value padded to a multiple of 4 bytes.
    private static func attribute(_ type: UInt16, _ value: [UInt8], padding: UInt8 = 0) -> [UInt8] {
        [UInt8(type >> 8), UInt8(type & 0xFF), UInt8(value.count >> 8), UInt8(value.count & 0xFF)] + value
            + [UInt8](repeating: padding, count: (4 - value.count % 4) % 4)
    }

    /// HMAC-SHA1 (RFC 2104) over ParleyIO's SHA-1, for keys of at most 64 bytes (ICE passwords are).
    static func hmacSHA1(key: [UInt8], _ message: [UInt8]) -> [UInt8] {
        precondition(key.count <= 64, "a key longer than SHA-1's block")
        let block = key + [UInt8](repeating: 0, count: 64 - key.count)
        let inner = MessageDigest.sha1(Data(block.map { $0 ^ 0x36 } + message))
        return Array(MessageDigest.sha1(Data(block.map { $0 ^ 0x5C } + Array(inner))))
    }

    /// CRC-32 (ISO-HDLC, as zlib's), bit by bit.
    static func crc32(_ bytes: [UInt8]) -> UInt32 {
        var crc: UInt32 = 0xFFFF_FFFF
        for byte in bytes {
            crc ^= UInt32(byte)
            for _ in 0..<8 { crc = crc & 1 == 1 ? (crc >> 1) ^ 0xEDB8_8320 : crc >> 1 }
        }
        return ~crc
    }
}

/// A UDP socket on 127.0.0.1 (a port the system picks) that the tests send and read STUN with.
final class STUNSocket: Sendable {
    /// The descriptor (closed by ``close()``) and its port.
    let descriptor: Int32
    let port: Int

    /// A socket whose reads wait at most `timeout`.
    init(readTimeout timeout: Duration = .milliseconds(100)) throws {
        let made = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        var address = Self.loopback(port: 0)
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(made, $0, length) == 0 && getsockname(made, $0, &length) == 0
            }
        }
        guard made >= 0, bound else {
            Glibc.close(made)
            throw InteropError("no UDP socket on 127.0.0.1: errno \(errno)")
        }
        descriptor = made
        port = Int(UInt16(bigEndian: address.sin_port))
        let microseconds = timeout.components.seconds * 1_000_000 + timeout.components.attoseconds / 1_000_000_000_000
        var wait = timeval(tv_sec: Int(microseconds / 1_000_000), tv_usec: Int(microseconds % 1_000_000))
        setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &wait, socklen_t(MemoryLayout<timeval>.size))
    }

    /// Sends `bytes` to 127.0.0.1:`port`.
    func send(_ bytes: [UInt8], toPort port: Int) {
        var address = Self.loopback(port: port)
        _ = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                sendto(descriptor, bytes, bytes.count, 0, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
    }

    /// The next datagram and the port it came from, nil when none came within the read timeout.
    func receive() -> (bytes: [UInt8], fromPort: Int)? {
        var buffer = [UInt8](repeating: 0, count: 2_048)
        var address = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let count = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { recvfrom(descriptor, &buffer, buffer.count, 0, $0, &length) }
        }
        guard count > 0 else { return nil }
        return (Array(buffer[0..<count]), Int(UInt16(bigEndian: address.sin_port)))
    }

    /// Closes the socket.
    func close() { Glibc.close(descriptor) }

    private static func loopback(port: Int) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = UInt16(port).bigEndian
        return address
    }
}

/// A STUN server on 127.0.0.1 that answers every Binding request with `mappedAddress` and the request's source port:
/// what a port-keeping NAT at that address would make of us. (A real server on loopback answers 127.0.0.1 itself,
/// which libnice drops as the host candidate it already has, so loopback shows no server-reflexive candidate
/// otherwise.) It answers in the request's kind: RFC 3489 (MAPPED-ADDRESS; libnice gathers so) or RFC 5389
/// (XOR-MAPPED-ADDRESS and FINGERPRINT; libnice's keep-alives). It keeps the source ports it answered.
final class ReflectingSTUNServer: Sendable {
    /// Its port.
    var port: Int { socket.port }
    private let socket: STUNSocket
    private let answered = Locked<[Int]>([])
    private let stopped = Locked(false)
    private let done = DispatchSemaphore(value: 0)

    /// Starts answering on a thread of its own.
    init(mappedAddress: String) throws {
        socket = try STUNSocket()
        Thread.detachNewThread { [self] in
            while !stopped.withLock({ $0 }) {
                guard let (bytes, from) = socket.receive(), let request = STUNMessage(bytes), request.type == STUNMessage.bindingRequest
                else { continue }
                let mapping = request.isClassic
                    ? (STUNMessage.mappedAddress, STUNMessage.mapped(mappedAddress, port: from))
                    : (STUNMessage.xorMappedAddress, STUNMessage.xorMapped(mappedAddress, port: from))
                let answer = STUNMessage(type: STUNMessage.bindingSuccess, transactionID: request.transactionID, attributes: [mapping])
                socket.send(answer.encoded(fingerprint: !request.isClassic), toPort: from)
                answered.withLock { $0.append(from) }
            }
            done.signal()
        }
    }

    /// The source ports of the Binding requests it answered.
    var requestsFrom: [Int] { answered.withLock { $0 } }

    /// Stops it and closes its socket.
    func stop() {
        stopped.withLock { $0 = true }
        done.wait()
        socket.close()
    }
}

/// The tests' STUN messages against RFC 5769's sample request (§2.1), byte for byte: MESSAGE-INTEGRITY and
/// FINGERPRINT computed as ICE agents check them.
@Suite("STUN test messages")
struct STUNTests {
    @Test("RFC 5769 §2.1's sample request, MESSAGE-INTEGRITY and FINGERPRINT included")
    func sampleRequest() {
        let request = STUNMessage(
            type: STUNMessage.bindingRequest,
            transactionID: [0xB7, 0xE7, 0xA7, 0x01, 0xBC, 0x34, 0xD6, 0x86, 0xFA, 0x87, 0xDF, 0xAE],
            attributes: [
                (STUNMessage.software, Array("STUN test client".utf8)), (STUNMessage.priority, [0x6E, 0x00, 0x01, 0xFF]),
                (STUNMessage.iceControlled, [0x93, 0x2F, 0xF9, 0xB1, 0x51, 0x26, 0x3B, 0x36]),
                (STUNMessage.username, Array("evtj:h6vY".utf8)),
            ])
        let expected = """
            000100582112a442b7e7a701bc34d686fa87dfae802200105354554e20746573742063\
            6c69656e74002400046e0001ff80290008932ff9b151263b36000600096576746a3a683676\
            59202020000800149aeaa70cbfd8cb56781ef2b5b2d3f249c1b571a280280004e57a3bcf
            """
        let bytes = request.encoded(integrity: "VOkJxbRl1RmTxUk/WvJxBt", padding: 0x20)
        #expect(bytes.map { String(format: "%02x", $0) }.joined() == expected)
        let read = STUNMessage(bytes)
        #expect(read?.attribute(STUNMessage.username) == Array("evtj:h6vY".utf8))
        #expect(read?.transactionID == request.transactionID)
    }

    @Test("XOR-MAPPED-ADDRESS written and read back; an RFC 3489 answer with MAPPED-ADDRESS")
    func mappedAddress() {
        let answer = STUNMessage(type: STUNMessage.bindingSuccess, attributes: [
            (STUNMessage.xorMappedAddress, STUNMessage.xorMapped("192.0.2.1", port: 32_853)),
        ])
        let read = STUNMessage(answer.encoded())
        #expect(read?.xorMapping?.address == "192.0.2.1" && read?.xorMapping?.port == 32_853)
        #expect(read?.type == STUNMessage.bindingSuccess && read?.isClassic == false)
        // RFC 3489: no magic cookie, a 16-byte transaction ID, the mapping unmasked.
        let classic = STUNMessage(
            type: STUNMessage.bindingSuccess, transactionID: Array(0..<16),
            attributes: [(STUNMessage.mappedAddress, STUNMessage.mapped("192.0.2.1", port: 32_853))])
        let bytes = classic.encoded(fingerprint: false)
        #expect(bytes.count == 32 && Array(bytes[4..<20]) == Array(0..<16) && Array(bytes[24..<32]) == [0, 1, 0x80, 0x55, 192, 0, 2, 1])
        #expect(STUNMessage(bytes)?.isClassic == true && STUNMessage(bytes)?.transactionID == Array(0..<16))
    }
}
