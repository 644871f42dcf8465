internal import COSIP

/// A Swift string made ready for libosip2's C-string parsers, and the way back.
///
/// libosip2 reads NUL-terminated strings, so a NUL inside a quoted-pair (legal: RFC 4475 intmeth) would end its input;
/// and it percent-decodes URI parts in place, so `%00` would cut a user name short. Both are avoided the same way:
/// before the call each NUL (and, for a URI, each `%`) is replaced by an octet that valid UTF-8 never contains (0xFE,
/// 0xFF), so it cannot clash with the text; every string read back has them restored, and Parley percent-decodes the
/// URI parts itself.
struct OSIPInput {
    /// The text, handed to C as it is when nothing needed replacing (the common case: no copy).
    private let original: String
    /// The NUL-terminated bytes with stand-ins, when something was replaced.
    private let replaced: [CChar]?
    /// Stands for NUL.
    private static let nulStandIn: UInt8 = 0xFE
    /// Stands for `%` inside a URI.
    private static let percentStandIn: UInt8 = 0xFF

    /// Prepares `text`; `%` is protected too when `protectingPercent` (for URIs only: elsewhere libosip2 reads `%` as
    /// a token character and must see it).
    init(_ text: String, protectingPercent: Bool = false) {
        original = text
        let needsReplacing = text.withUTF8Bytes { bytes in
            bytes.contains(0) || (protectingPercent && bytes.contains(UInt8(ascii: "%")))
        }
        guard needsReplacing else {
            replaced = nil
            return
        }
        var bytes = [CChar]()
        bytes.reserveCapacity(text.utf8.count + 1)
        for byte in text.utf8 {
            let mapped =
                if byte == 0 { Self.nulStandIn } else if protectingPercent, byte == UInt8(ascii: "%") { Self.percentStandIn } else { byte }
            bytes.append(CChar(bitPattern: mapped))
        }
        bytes.append(0)
        replaced = bytes
    }

    /// Calls `body` with the prepared C string.
    func withCString<Result>(_ body: (UnsafePointer<CChar>) -> Result) -> Result {
        guard let replaced else { return original.withCString(body) }
        return replaced.withUnsafeBufferPointer { body($0.baseAddress!) }
    }

    /// A string libosip2 produced from this input, with NUL and `%` restored; nil for a NULL pointer.
    func text(_ pointer: UnsafePointer<CChar>?) -> String? {
        guard let pointer else { return nil }
        let length = strlen(pointer)
        let buffer = UnsafeRawBufferPointer(start: pointer, count: length)
        guard replaced != nil else { return String(decoding: buffer, as: UTF8.self) }
        let restored = buffer.map { byte -> UInt8 in
            if byte == Self.nulStandIn { return 0 }
            if byte == Self.percentStandIn { return UInt8(ascii: "%") }
            return byte
        }
        return String(decoding: restored, as: UTF8.self)
    }

    /// `text(pointer)` for a mutable pointer.
    func text(_ pointer: UnsafeMutablePointer<CChar>?) -> String? {
        text(UnsafePointer(pointer))
    }

    /// A URI part libosip2 produced from this input, restored and then percent-decoded (what libosip2 would have done,
    /// minus the truncation at `%00`); nil for a NULL pointer.
    func unescapedText(_ pointer: UnsafeMutablePointer<CChar>?) -> String? {
        text(pointer).map(SIPSyntax.percentDecoded)
    }
}

/// Walking libosip2's linked lists without its iterator macros.
enum OSIPList {
    /// The elements of `list` in order, as raw pointers (never more than the list says it holds), read as the
    /// sequence is walked: no array is built.
    static func elements(_ list: UnsafePointer<osip_list_t>) -> Elements {
        Elements(first: list.pointee.node, count: Int(list.pointee.nb_elt))
    }

    /// A walk along a list's nodes, skipping empty ones, that stops after the count the list gives.
    struct Elements: Sequence, IteratorProtocol {
        fileprivate var node: UnsafeMutablePointer<__node_t>?
        fileprivate var remaining: Int

        fileprivate init(first: UnsafeMutablePointer<__node_t>?, count: Int) {
            node = first
            remaining = count
        }

        mutating func next() -> UnsafeMutableRawPointer? {
            while remaining > 0, let current = node {
                node = current.pointee.next
                if let element = current.pointee.element {
                    remaining -= 1
                    return element
                }
            }
            return nil
        }
    }

    /// A list of `osip_uri_param_t` / `osip_generic_param_t` (the same struct) as parameters. URI parameters and
    /// headers are percent-decoded; header parameters are kept as written.
    static func parameters(_ list: UnsafePointer<osip_list_t>, from input: OSIPInput, unescape: Bool) -> SIPParameters {
        var parameters: [SIPParameter] = []
        parameters.reserveCapacity(Int(list.pointee.nb_elt))
        for element in elements(list) {
            let parameter = element.assumingMemoryBound(to: osip_uri_param_t.self)
            let name = unescape ? input.unescapedText(parameter.pointee.gname) : input.text(parameter.pointee.gname)
            let value = unescape ? input.unescapedText(parameter.pointee.gvalue) : input.text(parameter.pointee.gvalue)
            parameters.append(SIPParameter(name: name ?? "", value: value))
        }
        return SIPParameters(parameters)
    }
}
