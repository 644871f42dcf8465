import ControlChannel
import Foundation
import Glibc

/// A plain blocking TCP client speaking WebSocket by hand, for writing bytes the way no browser would (the control
/// API tests and the interop tests drive parleyd's WebSocket with it).
public final class RawWebSocket {
    public let fd: Int32
    private var buffer: [UInt8] = []
    private var decoder = WebSocketFrameDecoder(maxPayloadBytes: 1 << 20, expectsMasked: false)

    /// Connects to 127.0.0.1 at `port`, from `source` (another loopback address, such as 127.0.0.2) when given.
    public init(port: UInt16, from source: String? = nil) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        if let source {
            var local = sockaddr_in()
            local.sin_family = sa_family_t(AF_INET)
            guard inet_pton(AF_INET, source, &local.sin_addr) == 1 else {
                Glibc.close(fd)
                throw POSIXError(.EINVAL)
            }
            let bound = withUnsafePointer(to: &local) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            guard bound == 0 else {
                let code = errno
                Glibc.close(fd)
                throw POSIXError(POSIXErrorCode(rawValue: code) ?? .EIO)
            }
        }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard result == 0 else {
            let code = errno
            Glibc.close(fd)
            throw POSIXError(POSIXErrorCode(rawValue: code) ?? .EIO)
        }
    }

    deinit { Glibc.close(fd) }

    public func write(_ bytes: some Collection<UInt8>) {
        let array = Array(bytes)
        var written = 0
        while written < array.count {
            let result = array.withUnsafeBytes { Glibc.send(fd, $0.baseAddress! + written, $0.count - written, Int32(MSG_NOSIGNAL)) }
            guard result > 0 else { return }  // the server may have closed: the test's reads tell
            written += result
        }
    }

    /// The upgrade request for `path` (parleyd upgrades on /ws) with the RFC's sample key and these extra (or
    /// replacing) headers.
    public static func request(_ extra: [String] = [], omitting: Set<String> = [], path: String = "/ws") -> String {
        let base = [
            "Host": "127.0.0.1", "Upgrade": "websocket", "Connection": "Upgrade",
            "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ==", "Sec-WebSocket-Version": "13",
        ]
        let replaced = Set(extra.map { String($0.prefix { $0 != ":" }) })
        let lines = base.filter { !omitting.contains($0.key) && !replaced.contains($0.key) }.sorted { $0.key < $1.key }
            .map { "\($0.key): \($0.value)" } + extra
        return "GET \(path) HTTP/1.1\r\n" + lines.map { $0 + "\r\n" }.joined() + "\r\n"
    }

    /// Sends the request and returns the response head (status line first), or nil at EOF or timeout.
    public func upgrade(_ request: String = RawWebSocket.request(), byteByByte: Bool = false) -> [String]? {
        if byteByByte {
            for byte in Array(request.utf8) { write([byte]) }
        } else {
            write(Array(request.utf8))
        }
        return readResponseHead()
    }

    public func readResponseHead(timeout: TimeInterval = 5) -> [String]? {
        let deadline = Date().addingTimeInterval(timeout)
        while true {
            if let end = findHeadEnd() {
                let head = String(decoding: buffer[0..<end], as: UTF8.self)
                buffer.removeFirst(end + 4)
                return head.components(separatedBy: "\r\n")
            }
            guard fill(until: deadline) else { return nil }
        }
    }

    /// The response body left after a refusal's head, up to EOF.
    public func readToEOF(timeout: TimeInterval = 5) -> String {
        let deadline = Date().addingTimeInterval(timeout)
        while fill(until: deadline) {}
        defer { buffer = [] }
        return String(decoding: buffer, as: UTF8.self)
    }

    private func findHeadEnd() -> Int? {
        guard buffer.count >= 4 else { return nil }
        for index in 0...(buffer.count - 4) where buffer[index..<(index + 4)].elementsEqual([13, 10, 13, 10]) { return index }
        return nil
    }

    /// Reads more bytes; false at EOF, on an error or after the deadline.
    private func fill(until deadline: Date) -> Bool {
        readSome(from: fd, into: &buffer, until: deadline)
    }

    /// Sends one masked frame (or unmasked when `masked` is false).
    public func send(_ opcode: WebSocketOpcode, _ payload: Data, isFinal: Bool = true, masked: Bool = true, byteByByte: Bool = false) {
        let bytes = WebSocketFrameEncoder.encode(
            WebSocketFrame(opcode, payload, isFinal: isFinal), maskingKey: masked ? [0x12, 0x34, 0x56, 0x78] : nil)
        if byteByByte {
            for byte in bytes { write([byte]) }
        } else {
            write(bytes)
        }
    }

    public func sendText(_ text: String) { send(.text, Data(text.utf8)) }

    /// The next frame, or nil at EOF or after `timeout` seconds.
    public func readFrame(timeout: TimeInterval = 5) -> WebSocketFrame? {
        let deadline = Date().addingTimeInterval(timeout)
        decoder.feed(buffer)
        buffer = []
        while true {
            switch decoder.next() {
            case .success(let frame): return frame
            case .failure: return nil
            case nil: break
            }
            guard fill(until: deadline) else { return nil }
            decoder.feed(buffer)
            buffer = []
        }
    }

    /// The next text message's text, or nil.
    public func readText(timeout: TimeInterval = 5) -> String? {
        guard let frame = readFrame(timeout: timeout), frame.opcode == .text else { return nil }
        return String(decoding: frame.payload, as: UTF8.self)
    }

    /// The code of the next frame if it is a close frame (0 for one without a code), or nil.
    public func readCloseCode(timeout: TimeInterval = 5) -> UInt16? {
        guard let frame = readFrame(timeout: timeout), frame.opcode == .close else { return nil }
        guard frame.payload.count >= 2 else { return 0 }
        return UInt16(frame.payload[frame.payload.startIndex]) << 8 | UInt16(frame.payload[frame.payload.startIndex + 1])
    }

    /// Whether the server closes the connection within `timeout` seconds (reading and dropping what comes first).
    public func closesConnection(timeout: TimeInterval = 5) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while fill(until: deadline) { buffer = [] }
        return deadline.timeIntervalSinceNow > 0
    }
}
