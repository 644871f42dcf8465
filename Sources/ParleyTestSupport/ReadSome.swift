import Foundation
import Glibc

/// Waits until `fd` has bytes (or `deadline` passes) and appends what one read returns to `buffer`; false at EOF, on
/// an error or after the deadline. The one blocking read loop of the tests' raw clients.
public func readSome(from fd: Int32, into buffer: inout [UInt8], until deadline: Date) -> Bool {
    while true {
        let remaining = deadline.timeIntervalSinceNow
        guard remaining > 0 else { return false }
        var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        guard poll(&poller, 1, Int32(remaining * 1000) + 1) > 0 else { continue }
        var chunk = [UInt8](repeating: 0, count: 65_536)
        let count = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        guard count > 0 else { return false }
        buffer.append(contentsOf: chunk[0..<count])
        return true
    }
}
