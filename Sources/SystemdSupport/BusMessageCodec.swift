import CSystemd
import Glibc

/// Reads a method call's arguments and writes values into a reply, through sd-bus's non-variadic calls
/// (`sd_bus_message_read_basic`, `append_basic`, `open_container`/`close_container`).
enum BusMessageCodec {
    /// The arguments of `message` for these signatures (basic types only: what Parley's methods take), or nil when
    /// the message does not hold them.
    static func read(_ message: OpaquePointer, signatures: [String]) -> [BusValue]? {
        var values: [BusValue] = []
        for signature in signatures {
            guard signature.utf8.count == 1, let value = readBasic(message, type: signature.utf8.first!) else { return nil }
            values.append(value)
        }
        return values
    }

    /// Every value left in `message` (a reply's or a signal's body, whatever its signature: basic values, arrays,
    /// structures, dictionaries, variants), or nil when it cannot be read.
    static func readAll(_ message: OpaquePointer) -> [BusValue]? {
        var values: [BusValue] = []
        while true {
            var type: CChar = 0
            var contents: UnsafePointer<CChar>?
            let peeked = sd_bus_message_peek_type(message, &type, &contents)
            if peeked == 0 { return values }
            guard peeked > 0, let value = readOne(message, type: UInt8(bitPattern: type), contents: contents) else { return nil }
            values.append(value)
        }
    }

    /// The next value, of `type` (a container's `contents` signature given), or nil.
    private static func readOne(_ message: OpaquePointer, type: UInt8, contents: UnsafePointer<CChar>?) -> BusValue? {
        let containers: [UInt8] = Array("arve".utf8)
        guard containers.contains(type) else { return readBasic(message, type: type) }
        guard let contents, sd_bus_message_enter_container(message, CChar(bitPattern: type), contents) > 0,
            let inner = readAll(message), sd_bus_message_exit_container(message) >= 0
        else { return nil }
        switch type {
        case UInt8(ascii: "a"): return .array(elementSignature: String(cString: contents), inner)
        case UInt8(ascii: "r"): return .structure(inner)
        case UInt8(ascii: "v"): return inner.count == 1 ? .variant(inner[0]) : nil
        default: return inner.count == 2 ? .dictEntry(inner[0], inner[1]) : nil
        }
    }

    private static func readBasic(_ message: OpaquePointer, type: UInt8) -> BusValue? {
        let code = CChar(bitPattern: type)
        switch type {
        case UInt8(ascii: "s"), UInt8(ascii: "o"):
            var pointer: UnsafePointer<CChar>?
            guard sd_bus_message_read_basic(message, code, &pointer) > 0, let pointer else { return nil }
            let text = String(cString: pointer)
            return type == UInt8(ascii: "s") ? .string(text) : .objectPath(text)
        case UInt8(ascii: "y"): return basic(message, code, UInt8(0), BusValue.byte)
        case UInt8(ascii: "b"): return basic(message, code, Int32(0)) { .bool($0 != 0) }
        case UInt8(ascii: "u"): return basic(message, code, UInt32(0), BusValue.uint32)
        case UInt8(ascii: "i"): return basic(message, code, Int32(0), BusValue.int32)
        case UInt8(ascii: "x"): return basic(message, code, Int64(0), BusValue.int64)
        case UInt8(ascii: "t"): return basic(message, code, UInt64(0), BusValue.uint64)
        case UInt8(ascii: "d"): return basic(message, code, 0.0, BusValue.double)
        case UInt8(ascii: "h"):
            // The message owns its descriptor: the value is a duplicate of one's own.
            return basic(message, code, Int32(-1)) { fd in
                let own = fcntl(fd, F_DUPFD_CLOEXEC, 3)
                return own >= 0 ? .unixFD(own) : nil
            }
        default:
            return nil
        }
    }

    /// Reads one fixed-size basic value of type `code` into a `Value` and makes it a ``BusValue``.
    private static func basic<Value: BitwiseCopyable>(
        _ message: OpaquePointer, _ code: CChar, _ initial: Value, _ make: (Value) -> BusValue?
    ) -> BusValue? {
        var value = initial
        return sd_bus_message_read_basic(message, code, &value) > 0 ? make(value) : nil
    }

    /// Appends `value` to `message`; sd-bus's result (negative: an errno).
    @discardableResult
    static func append(_ value: BusValue, to message: OpaquePointer) -> Int32 {
        func basic(_ type: Character, _ pointer: UnsafeRawPointer) -> Int32 {
            sd_bus_message_append_basic(message, CChar(bitPattern: type.asciiValue!), pointer)
        }
        switch value {
        case .string(let text): return text.withCString { basic("s", $0) }
        case .byte(var number): return basic("y", &number)
        case .objectPath(let path): return path.withCString { basic("o", $0) }
        case .bool(let flag):
            var number: Int32 = flag ? 1 : 0
            return basic("b", &number)
        case .uint32(var number): return basic("u", &number)
        case .int32(var number): return basic("i", &number)
        case .int64(var number): return basic("x", &number)
        case .uint64(var number): return basic("t", &number)
        case .double(var number): return basic("d", &number)
        case .unixFD(var fd): return basic("h", &fd)
        case .array(let element, let values):
            return container("a", element, values, message)
        case .structure(let fields):
            return container("r", fields.map(\.signature).joined(), fields, message)
        case .variant(let inner):
            return container("v", inner.signature, [inner], message)
        case .dictEntry(let key, let inner):
            return container("e", key.signature + inner.signature, [key, inner], message)
        }
    }

    private static func container(_ type: Character, _ contents: String, _ values: [BusValue], _ message: OpaquePointer) -> Int32 {
        var result = contents.withCString { sd_bus_message_open_container(message, CChar(bitPattern: type.asciiValue!), $0) }
        guard result >= 0 else { return result }
        for value in values {
            result = append(value, to: message)
            guard result >= 0 else { return result }
        }
        return sd_bus_message_close_container(message)
    }
}
