import ControlChannel
import Foundation
import Glibc
import Synchronization
import Testing

/// A server on a fresh socket with a fresh token, stopped and cleaned up by `finish()`.
private struct Fixture {
    let directory = TempDirectory()
    let token: String
    let recorder = Recorder()
    let server: ControlServer

    init(limits: ControlLimits = .init()) throws {
        token = try ControlToken.loadOrCreate(in: directory.path)
        server = try ControlServer(
            socketPath: directory.socketPath, token: token, limits: limits, onLine: recorder.onLine,
            onClose: recorder.onClose)
    }

    func client() throws -> ControlClient {
        try ControlClient(socketPath: directory.socketPath, token: token)
    }

    func finish() {
        server.stop()
        directory.remove()
    }
}

@Suite struct ControlServerHandshakeTests {
    @Test func goodTokenIsWelcomed() throws {
        let fixture = try Fixture()
        defer { fixture.finish() }
        let client = try fixture.client()
        #expect(fixture.server.clientCount == 1)
        try client.send(line(#"{"n":1}"#))
        let lines = fixture.recorder.waitForLines(1)
        #expect(lines.map(\.1) == [line(#"{"n":1}"#)])
        client.close()
        #expect(fixture.recorder.waitForCloses(1))
        #expect(fixture.recorder.closedClients == [lines[0].0])
        #expect(fixture.server.clientCount == 0)
    }

    @Test func wrongTokenIsRefused() throws {
        let fixture = try Fixture()
        defer { fixture.finish() }
        #expect(throws: ControlClientError.refused(code: "unauthorized", message: "The token is wrong: read it from parleyd's control.token.")) {
            try ControlClient(socketPath: fixture.directory.socketPath, token: String(repeating: "0", count: 64))
        }
        #expect(fixture.server.clientCount == 0)
    }

    @Test(arguments: [
        (#"{"v":1,"type":"hello"}"#, "unauthorized"), ("hello", "unauthorized"), (#"{"v":1,"type":"ping","token":"x"}"#, "unauthorized"),
        (#"{"v":2,"type":"hello","token":"x"}"#, "unsupportedVersion"), (#"{"type":"hello","token":"x"}"#, "unsupportedVersion"),
    ])
    func missingTokenOrMalformedHelloIsRefused(hello: String, code: String) throws {
        let fixture = try Fixture()
        defer { fixture.finish() }
        let raw = try RawSocket(path: fixture.directory.socketPath)
        raw.write(hello + "\n")
        let answer = try #require(raw.readLine())
        #expect(answer.contains(#""type":"error""#))
        #expect(answer.contains(#""code":"\#(code)""#), "\(answer)")
        #expect(raw.readLine() == nil)  // closed
        #expect(fixture.recorder.closedClients.isEmpty)  // never authenticated: onClose is not for it
    }

    @Test func noHelloInTimeIsRefused() throws {
        let fixture = try Fixture(limits: ControlLimits(helloTimeout: 0.2))
        defer { fixture.finish() }
        let raw = try RawSocket(path: fixture.directory.socketPath)
        let answer = try #require(raw.readLine(timeout: 5))
        #expect(answer.contains(#""code":"unauthorized""#))
        #expect(answer.contains("No hello came"))
        #expect(raw.readLine() == nil)
    }

    @Test func extraClientsAreTurnedAway() throws {
        let fixture = try Fixture(limits: ControlLimits(maxClients: 1))
        defer { fixture.finish() }
        let first = try fixture.client()
        #expect(throws: ControlClientError.refused(code: "tooManyClients", message: "parleyd serves as many clients as it takes; try again later.")) {
            try fixture.client()
        }
        try first.send(line("{}"))
        #expect(fixture.recorder.waitForLines(1).count == 1)
    }

    @Test("full: a new client with the token takes the slot of the idle client that never subscribed; subscribers are never evicted")
    func idleUnsubscribedClientsMakeRoom() throws {
        let fixture = try Fixture(limits: ControlLimits(maxClients: 2, evictionIdleTime: 0))
        defer { fixture.finish() }
        let watcher = try fixture.client()
        try watcher.send(line(#"{"n":1}"#))
        let watcherID = try #require(fixture.recorder.waitForLines(1).first?.0)
        fixture.server.subscribe(watcherID)
        #expect(fixture.server.clientCount == 1)  // a round trip through the loop: the subscription is in place
        let idle = try fixture.client()
        // A connection without the token evicts nobody: it is refused, and the idle client keeps its slot.
        let stranger = try RawSocket(path: fixture.directory.socketPath)
        stranger.write(#"{"v":1,"type":"hello","token":"\#(String(repeating: "0", count: 64))"}"# + "\n")
        #expect(stranger.readLine()?.contains(#""code":"unauthorized""#) == true)
        #expect(fixture.server.clientCount == 2)
        let newcomer = try fixture.client()  // welcomed: the idle one made room
        let evicted = try idle.readLine(timeout: 5)
        #expect(String(decoding: evicted, as: UTF8.self).contains(#""code":"evicted""#))
        try newcomer.send(line(#"{"n":2}"#))
        let newcomerID = try #require(fixture.recorder.waitForLines(2).last?.0)
        fixture.server.subscribe(newcomerID)
        #expect(fixture.server.clientCount == 2)
        #expect(throws: ControlClientError.refused(code: "tooManyClients", message: "parleyd serves as many clients as it takes; try again later.")) {
            try fixture.client()
        }
        fixture.server.sendToSubscribers(line(#"{"event":"x"}"#))
        for client in [watcher, newcomer] {
            #expect(String(decoding: try client.readLine(timeout: 5), as: UTF8.self) == #"{"event":"x"}"#)
        }
    }
}

@Suite struct ControlServerLineTests {
    @Test func linesArriveInOrderWhateverTheWrites() throws {
        let fixture = try Fixture()
        defer { fixture.finish() }
        let raw = try RawSocket(path: fixture.directory.socketPath)
        raw.write(#"{"v":1,"type":"hello","token":"\#(fixture.token)"}"# + "\r\n")
        #expect(raw.readLine() == #"{"v":1,"type":"welcome"}"#)
        for byte in Array(#"{"n":1,"text":"héllo"}"#.utf8) + [0x0D, 0x0A] { raw.write([byte]) }
        raw.write(#"{"n":2}"# + "\n\n\r\n" + #"{"n":3}"# + "\n" + #"{"n":"#)
        raw.write("4}\n")
        let lines = fixture.recorder.waitForLines(4)
        #expect(lines.map { String(decoding: $0.1, as: UTF8.self) } == [#"{"n":1,"text":"héllo"}"#, #"{"n":2}"#, #"{"n":3}"#, #"{"n":4}"#])
        #expect(Set(lines.map(\.0)).count == 1)
    }

    @Test func anOversizeLineClosesTheConnection() throws {
        let fixture = try Fixture(limits: ControlLimits(maxLineBytes: 1024))
        defer { fixture.finish() }
        let client = try fixture.client()
        try client.send(Data(repeating: 0x61, count: 1024))  // exactly the limit: fine
        #expect(fixture.recorder.waitForLines(1).count == 1)
        try client.send(Data(repeating: 0x61, count: 5000))
        let answer = String(decoding: try client.readLine(timeout: 5), as: UTF8.self)
        #expect(answer.contains(#""code":"frameTooLarge""#))
        #expect(throws: ControlClientError.closedByServer) { try client.readLine(timeout: 5) }
        #expect(fixture.recorder.waitForCloses(1))
    }

    @Test("an oversize first message is frameTooLarge too, and every transport error has its three members")
    func anOversizeHelloIsFrameTooLarge() throws {
        let fixture = try Fixture(limits: ControlLimits(maxLineBytes: 1024))
        defer { fixture.finish() }
        let raw = try RawSocket(path: fixture.directory.socketPath)
        raw.write(String(repeating: "a", count: 5000) + "\n")
        let answer = try #require(raw.readLine())
        #expect(answer.contains(#""code":"frameTooLarge""#) && answer.contains(#""details":null"#), "\(answer)")
        #expect(answer.contains("A line is over 1024 bytes"), "a sentence for people: \(answer)")
        #expect(raw.readLine() == nil)
        // Under the line limit but over what any hello needs (a token is 64 characters): frameTooLarge as well.
        let roomy = try Fixture()
        defer { roomy.finish() }
        let second = try RawSocket(path: roomy.directory.socketPath)
        second.write(#"{"v":1,"type":"hello","token":""# + String(repeating: "a", count: 10_000) + "\"}\n")
        let refused = try #require(second.readLine())
        #expect(refused.contains(#""code":"frameTooLarge""#), "\(refused)")
        #expect(second.readLine() == nil)
    }

    @Test func invalidUTF8IsSkippedAndTheConnectionStays() throws {
        let fixture = try Fixture()
        defer { fixture.finish() }
        let client = try fixture.client()
        try client.send(Data([0x7B, 0xFF, 0xFE, 0x7D]))
        let answer = String(decoding: try client.readLine(timeout: 5), as: UTF8.self)
        #expect(answer.contains(#""code":"invalidFrame""#))
        try client.send(line(#"{"after":true}"#))
        #expect(fixture.recorder.waitForLines(1).map(\.1) == [line(#"{"after":true}"#)])
        #expect(fixture.server.clientCount == 1)
    }

    @Test func sendBroadcastAndCloseReachTheRightClients() throws {
        let fixture = try Fixture()
        defer { fixture.finish() }
        let first = try fixture.client()
        let second = try fixture.client()
        try first.send(line(#"{"who":1}"#))
        let firstID = try #require(fixture.recorder.waitForLines(1).first?.0)
        fixture.server.broadcast(line(#"{"event":"x"}"#))
        #expect(try first.readLine(timeout: 5) == line(#"{"event":"x"}"#))
        #expect(try second.readLine(timeout: 5) == line(#"{"event":"x"}"#))
        fixture.server.send(line(#"{"only":1}"#), to: firstID)
        #expect(try first.readLine(timeout: 5) == line(#"{"only":1}"#))
        #expect(throws: ControlClientError.timedOut(0.1)) { try second.readLine(timeout: 0.1) }
        fixture.server.close(firstID)
        #expect(throws: ControlClientError.closedByServer) { try first.readLine(timeout: 5) }
        #expect(fixture.recorder.waitForCloses(1))
        #expect(fixture.server.clientCount == 1)
    }

    @Test func handlersMayCallBackIntoTheServer() throws {
        let directory = TempDirectory()
        defer { directory.remove() }
        let box = Mutex<ControlServer?>(nil)
        let server = try ControlServer(
            socketPath: directory.socketPath, token: "t",
            onLine: { id, line in
                let server = box.withLock { $0 }
                server?.send(line, to: id)  // an echo, from the server's own queue
                if line == Data("bye".utf8) { server?.close(id) }
            })
        box.withLock { $0 = server }
        defer {
            box.withLock { $0 = nil }
            server.stop()
        }
        let client = try ControlClient(socketPath: directory.socketPath, token: "t")
        for index in 0..<50 { try client.send(line(#"{"i":\#(index)}"#)) }
        for index in 0..<50 { #expect(try client.readLine(timeout: 5) == line(#"{"i":\#(index)}"#)) }
        try client.send(line("bye"))
        #expect(try client.readLine(timeout: 5) == line("bye"))
        #expect(throws: ControlClientError.closedByServer) { try client.readLine(timeout: 5) }
    }

    @Test func aClientThatNeverReadsIsDroppedAndOthersCarryOn() throws {
        let limits = ControlLimits(maxQueuedBytes: 32 * 1024, socketSendBufferSize: 4096)
        let fixture = try Fixture(limits: limits)
        defer { fixture.finish() }
        let sleeper = try fixture.client()
        try sleeper.send(line(#"{"sleeper":true}"#))
        let sleeperID = try #require(fixture.recorder.waitForLines(1).first?.0)
        let reader = try fixture.client()
        let payload = line(#"{"pad":""# + String(repeating: "x", count: 1000) + #""}"#)
        var sent = 0
        while fixture.recorder.closedClients.isEmpty && sent < 20_000 {
            fixture.server.broadcast(payload)
            #expect(try reader.readLine(timeout: 5) == payload)
            sent += 1
        }
        #expect(fixture.recorder.closedClients == [sleeperID])
        #expect(sent < 20_000)
        fixture.server.broadcast(line(#"{"still":"here"}"#))
        #expect(try reader.readLine(timeout: 5) == line(#"{"still":"here"}"#))
        #expect(fixture.server.clientCount == 1)
        _ = sleeper
    }
}

@Suite struct ControlServerSocketFileTests {
    @Test func aStaleSocketFileIsReplaced() throws {
        let directory = TempDirectory()
        defer { directory.remove() }
        // A socket bound and closed without unlink: what a crashed server leaves.
        let stale = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: Array(directory.socketPath.utf8)) }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(stale, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        #expect(bound == 0)
        close(stale)
        #expect(FileManager.default.fileExists(atPath: directory.socketPath))

        let server = try ControlServer(socketPath: directory.socketPath, token: "t", onLine: { _, _ in })
        defer { server.stop() }
        _ = try ControlClient(socketPath: directory.socketPath, token: "t")
        var info = stat()
        #expect(stat(directory.socketPath, &info) == 0)
        #expect(info.st_mode & 0o777 == 0o600)
    }

    @Test func aLiveSocketOrAnotherFileIsNotTouched() throws {
        let directory = TempDirectory()
        defer { directory.remove() }
        let server = try ControlServer(socketPath: directory.socketPath, token: "t", onLine: { _, _ in })
        defer { server.stop() }
        #expect(throws: ControlServerError.alreadyInUse(path: directory.socketPath)) {
            try ControlServer(socketPath: directory.socketPath, token: "t", onLine: { _, _ in })
        }
        _ = try ControlClient(socketPath: directory.socketPath, token: "t")  // the first server still serves

        let file = directory.path + "/plain"
        #expect(FileManager.default.createFile(atPath: file, contents: Data("keep".utf8)))
        #expect(throws: ControlServerError.notASocket(path: file)) {
            try ControlServer(socketPath: file, token: "t", onLine: { _, _ in })
        }
        #expect(FileManager.default.contents(atPath: file) == Data("keep".utf8))

        let long = "/tmp/" + String(repeating: "p", count: 120)
        #expect(throws: ControlServerError.pathTooLong(path: long, maxBytes: 107)) {
            try ControlServer(socketPath: long, token: "t", onLine: { _, _ in })
        }
    }

    @Test func stopRemovesTheSocketFileAndIsIdempotent() throws {
        let directory = TempDirectory()
        defer { directory.remove() }
        let recorder = Recorder()
        let server = try ControlServer(
            socketPath: directory.socketPath, token: "t", onLine: recorder.onLine, onClose: recorder.onClose)
        let client = try ControlClient(socketPath: directory.socketPath, token: "t")
        server.stop()
        #expect(!FileManager.default.fileExists(atPath: directory.socketPath))
        #expect(throws: ControlClientError.closedByServer) { try client.readLine(timeout: 5) }
        server.stop()
        #expect(throws: ControlClientError.notListening(path: directory.socketPath)) {
            try ControlClient(socketPath: directory.socketPath, token: "t")
        }
        #expect(ControlClientError.notListening(path: directory.socketPath).description.contains("--data-dir \(directory.path)"))
    }
}
