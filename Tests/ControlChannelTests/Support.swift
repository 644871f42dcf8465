import ControlChannel
import Dispatch
import Foundation
import Glibc
import ParleyTestSupport
import Synchronization

/// A fresh directory under /tmp (short, so socket paths fit in sun_path), removed by `remove()`.
struct TempDirectory {
    let path: String

    init() {
        var template = Array("/tmp/pcc.XXXXXX".utf8CString)
        let made = template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }
        precondition(made != nil, "mkdtemp failed")
        path = String(decoding: template.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    var socketPath: String { path + "/control.sock" }

    func remove() { try? FileManager.default.removeItem(atPath: path) }
}

/// What a server's handlers saw, with waits bounded by deadlines.
final class Recorder: Sendable {
    private let lines = Mutex<[(ControlClientID, Data)]>([])
    private let closed = Mutex<[ControlClientID]>([])
    private let lineSignal = DispatchSemaphore(value: 0)
    private let closeSignal = DispatchSemaphore(value: 0)

    var onLine: @Sendable (ControlClientID, Data) -> Void {
        { [self] id, line in
            lines.withLock { $0.append((id, line)) }
            lineSignal.signal()
        }
    }

    var onClose: @Sendable (ControlClientID) -> Void {
        { [self] id in
            closed.withLock { $0.append(id) }
            closeSignal.signal()
        }
    }

    var closedClients: [ControlClientID] { closed.withLock { $0 } }

    /// The lines received once there are `count` of them, or those there are after `timeout` seconds.
    func waitForLines(_ count: Int, timeout: TimeInterval = 5) -> [(ControlClientID, Data)] {
        let deadline = DispatchTime.now() + timeout
        while true {
            let now = lines.withLock { $0 }
            if now.count >= count || lineSignal.wait(timeout: deadline) == .timedOut { return lines.withLock { $0 } }
        }
    }

    /// Whether `count` clients have closed within `timeout` seconds.
    func waitForCloses(_ count: Int, timeout: TimeInterval = 5) -> Bool {
        let deadline = DispatchTime.now() + timeout
        while true {
            if closedClients.count >= count { return true }
            if closeSignal.wait(timeout: deadline) == .timedOut { return closedClients.count >= count }
        }
    }
}

/// A plain blocking Unix socket, for writing bytes the way no ControlClient would.
final class RawSocket {
    private(set) var fd: Int32
    private var buffer: [UInt8] = []

    init(path: String) throws {
        fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: bytes) }
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard result == 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
    }

    deinit { Glibc.close(fd) }

    func write(_ bytes: [UInt8]) {
        var written = 0
        while written < bytes.count {
            let result = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress! + written, $0.count - written, Int32(MSG_NOSIGNAL)) }
            precondition(result > 0, "raw send failed: \(errno)")
            written += result
        }
    }

    func write(_ text: String) { write(Array(text.utf8)) }

    /// The next line as text, or nil at EOF or after `timeout` seconds.
    func readLine(timeout: TimeInterval = 5) -> String? {
        let deadline = Date().addingTimeInterval(timeout)
        while true {
            if let newline = buffer.firstIndex(of: 0x0A) {
                let line = String(decoding: buffer[0..<newline], as: UTF8.self)
                buffer.removeFirst(newline + 1)
                return line
            }
            guard readSome(from: fd, into: &buffer, until: deadline) else { return nil }
        }
    }
}

/// `{"n":N}` and the like.
func line(_ text: String) -> Data { Data(text.utf8) }
