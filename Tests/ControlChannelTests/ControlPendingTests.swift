import ControlChannel
import Foundation
import Glibc
import ParleyTestSupport
import Synchronization
import Testing

/// A descriptor connected to the Unix socket at `path` (blocking), or nil.
private func connectUnix(_ path: String) -> Int32? {
    let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
    var address = sockaddr_un()
    address.sun_family = sa_family_t(AF_UNIX)
    withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: Array(path.utf8)) }
    let result = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
    }
    guard result == 0 else {
        Glibc.close(fd)
        return nil
    }
    return fd
}

/// A descriptor connected to 127.0.0.1 at `port` from the loopback address `source`, or nil.
private func connectTCP(port: UInt16, from source: String) -> Int32? {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    var local = sockaddr_in()
    local.sin_family = sa_family_t(AF_INET)
    inet_pton(AF_INET, source, &local.sin_addr)
    var remote = sockaddr_in()
    remote.sin_family = sa_family_t(AF_INET)
    remote.sin_port = port.bigEndian
    remote.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
    let bound = withUnsafePointer(to: &local) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
    }
    let connected = withUnsafePointer(to: &remote) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
    }
    guard bound == 0, connected == 0 else {
        Glibc.close(fd)
        return nil
    }
    return fd
}

/// What the peer sent on `fd` before closing it, or nil when it did not close it within `timeout` seconds.
private func lastWords(_ fd: Int32, within timeout: TimeInterval) -> String? {
    let deadline = Date().addingTimeInterval(timeout)
    var buffer: [UInt8] = []
    while readSome(from: fd, into: &buffer, until: deadline) {}
    return deadline.timeIntervalSinceNow > 0 ? String(decoding: buffer, as: UTF8.self) : nil
}

/// Waits (bounded) until `condition` holds; whether it did.
private func eventually(within timeout: TimeInterval = 5, _ condition: () -> Bool) -> Bool {
    let deadline = Date().addingTimeInterval(timeout)
    while !condition() {
        guard Date() < deadline else { return false }
        usleep(5_000)
    }
    return true
}

/// `count` connections that never send a byte, each reopened as soon as the server closes it, on a thread of their
/// own until ``stop()`` (the attack of issue 48: idle connections that once held every client slot).
private final class IdleFlood: Sendable {
    private let stopped = Atomic<Bool>(false)
    private let reopenings = Atomic<Int>(0)
    private let finished = DispatchSemaphore(value: 0)

    init(count: Int, connect: @escaping @Sendable () -> Int32?) {
        let thread = Thread { [self] in
            var fds = (0..<count).compactMap { _ in connect() }
            while !stopped.load(ordering: .relaxed) {
                var polls = fds.map { pollfd(fd: $0, events: Int16(POLLIN), revents: 0) }
                guard poll(&polls, nfds_t(polls.count), 10) > 0 else { continue }
                for (index, entry) in polls.enumerated() where entry.revents != 0 {
                    var chunk = [UInt8](repeating: 0, count: 4096)
                    guard chunk.withUnsafeMutableBytes({ read(entry.fd, $0.baseAddress, $0.count) }) <= 0 else { continue }
                    Glibc.close(entry.fd)
                    fds[index] = connect() ?? -1
                    reopenings.add(1, ordering: .relaxed)
                }
                fds.removeAll { $0 < 0 }
            }
            for fd in fds { Glibc.close(fd) }
            self.finished.signal()
        }
        thread.start()
    }

    /// Connections the server closed and the flood opened again.
    var reopened: Int { reopenings.load(ordering: .relaxed) }

    func stop() {
        stopped.store(true, ordering: .relaxed)
        finished.wait()
    }
}

@Suite struct ControlPendingConnectionTests {
    /// The hello deadline of the flood tests: short, so that the flood's connections are closed and reopened several
    /// times while the clients connect.
    static let floodLimits = ControlLimits(helloTimeout: 0.5)

    @Test("70 connections that never say hello, reopened whenever closed, keep none of 40 clients out (Unix socket)")
    func idleFloodOnTheUnixSocket() throws {
        let directory = TempDirectory()
        defer { directory.remove() }
        let token = try ControlToken.loadOrCreate(in: directory.path)
        let server = try ControlServer(
            socketPath: directory.socketPath, token: token, limits: Self.floodLimits, onLine: { _, _ in })
        defer { server.stop() }
        let path = directory.socketPath
        let flood = IdleFlood(count: 70) { connectUnix(path) }
        defer { flood.stop() }
        #expect(eventually { server.pendingCount == ControlLimits().maxPendingPerSource })
        var clients: [ControlClient] = []
        var refusals: [String] = []
        for _ in 0..<40 {
            do {
                clients.append(try ControlClient(socketPath: path, token: token))
            } catch {
                refusals.append("\(error)")
            }
            usleep(30_000)  // over more than two of the flood's rounds
        }
        #expect(refusals.isEmpty, "\(refusals)")
        #expect(clients.count == 40)
        #expect(server.clientCount == 40)
        #expect(server.pendingCount <= ControlLimits().maxPendingPerSource)  // all Unix peers are one source
        #expect(eventually { flood.reopened >= 70 - ControlLimits().maxPendingPerSource })
    }

    @Test("70 idle connections from 127.0.0.1, reopened whenever closed, keep none of 40 WebSocket clients from 127.0.0.1 out")
    func idleFloodOnTheWebSocket() throws {
        let token = String(repeating: "k", count: 64)
        let server = try ControlWebSocketServer(port: 0, token: token, limits: Self.floodLimits, onLine: { _, _ in })
        defer { server.stop() }
        let port = server.port
        let flood = IdleFlood(count: 70) { connectTCP(port: port, from: "127.0.0.1") }
        defer { flood.stop() }
        #expect(eventually { server.pendingCount == ControlLimits().maxPendingPerSource })
        var welcomed: [RawWebSocket] = []
        for _ in 0..<40 {
            let client = try RawWebSocket(port: port)
            guard client.upgrade()?.first == "HTTP/1.1 101 Switching Protocols" else { continue }
            client.sendText(#"{"v":1,"type":"hello","token":"\#(token)"}"#)
            if client.readText() == #"{"v":1,"type":"welcome"}"# { welcomed.append(client) }
            usleep(30_000)
        }
        #expect(welcomed.count == 40)
        #expect(server.clientCount == 40)
        #expect(server.pendingCount <= ControlLimits().maxPendingPerSource)
        #expect(eventually { flood.reopened >= 70 - ControlLimits().maxPendingPerSource })
    }

    @Test("idle connections beyond the per-source and total bounds are set aside oldest first, closed without a word at their deadline; a newcomer from 127.0.0.2 is served")
    func pendingConnectionsOfOneAddressDoNotStarveAnother() throws {
        let token = String(repeating: "k", count: 64)
        let limits = ControlLimits(maxClients: 2, helloTimeout: 1, maxPendingConnections: 8, maxPendingPerSource: 4)
        let server = try ControlWebSocketServer(port: 0, token: token, limits: limits, onLine: { _, _ in })
        defer { server.stop() }
        var first: [Int32] = []
        var third: [Int32] = []
        defer { for fd in first + third { Glibc.close(fd) } }
        for _ in 0..<10 { first.append(try #require(connectTCP(port: server.port, from: "127.0.0.1"))) }
        for _ in 0..<10 { third.append(try #require(connectTCP(port: server.port, from: "127.0.0.3"))) }
        // Each address keeps its four newest waiting for a hello; the six before them were set aside.
        #expect(eventually { server.pendingCount == 8 })
        // The total is reached: a newcomer from 127.0.0.2 sets aside the oldest of an address holding the most
        // (127.0.0.1's, the older of the two), is read as it comes, and is served.
        let newcomer = try RawWebSocket(port: server.port, from: "127.0.0.2")
        #expect(newcomer.upgrade()?.first == "HTTP/1.1 101 Switching Protocols")
        newcomer.sendText(#"{"v":1,"type":"hello","token":"\#(token)"}"#)
        #expect(newcomer.readText() == #"{"v":1,"type":"welcome"}"#)
        #expect(server.clientCount == 1)
        #expect(server.pendingCount == 7)
        // One from 127.0.0.1, beside its idle ones, is served too.
        let neighbour = try RawWebSocket(port: server.port, from: "127.0.0.1")
        #expect(neighbour.upgrade()?.first == "HTTP/1.1 101 Switching Protocols")
        neighbour.sendText(#"{"v":1,"type":"hello","token":"\#(token)"}"#)
        #expect(neighbour.readText() == #"{"v":1,"type":"welcome"}"#)
        #expect(server.clientCount == 2)
        // At the 1 s deadline those still waiting for their hello are told 408; those set aside are closed silently.
        let words = (first + third).map { lastWords($0, within: 3) }
        let told = words.map { $0?.hasPrefix("HTTP/1.1 408 Request Timeout") == true }
        #expect(words.allSatisfy { $0 != nil }, "every idle connection is closed by its deadline")
        #expect(told == Array(repeating: false, count: 7) + Array(repeating: true, count: 3)
            + Array(repeating: false, count: 6) + Array(repeating: true, count: 4), "\(words)")
        #expect(server.pendingCount == 0)
    }

    @Test("a connection that came in while a slot was free, and says hello once every slot is taken, gets tooManyClients")
    func aHelloAfterTheSlotsFilledIsTurnedAway() throws {
        let directory = TempDirectory()
        defer { directory.remove() }
        let token = try ControlToken.loadOrCreate(in: directory.path)
        let server = try ControlServer(
            socketPath: directory.socketPath, token: token, limits: ControlLimits(maxClients: 1), onLine: { _, _ in })
        defer { server.stop() }
        let early = try RawSocket(path: directory.socketPath)
        #expect(eventually { server.pendingCount == 1 })
        let client = try ControlClient(socketPath: directory.socketPath, token: token)
        #expect(server.clientCount == 1)
        early.write(#"{"v":1,"type":"hello","token":"\#(token)"}"# + "\n")
        #expect(early.readLine()?.contains(#""code":"tooManyClients""#) == true)
        #expect(early.readLine() == nil)
        #expect(server.clientCount == 1)
        _ = client
    }
}
