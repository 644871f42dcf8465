import ControlChannel
import Foundation
import ParleyIO
import ParleyTestSupport
import Glibc
import Testing

/// A WebSocket server on a free loopback port, stopped by `finish()`.
private struct Fixture {
    let token = String(repeating: "k", count: 64)
    let recorder = Recorder()
    let server: ControlWebSocketServer

    init(limits: ControlLimits = .init(), allowedOrigins: Set<String> = []) throws {
        server = try ControlWebSocketServer(
            port: 0, token: token, allowedOrigins: allowedOrigins, limits: limits, onLine: recorder.onLine,
            onClose: recorder.onClose)
    }

    var hello: String { #"{"v":1,"type":"hello","token":"\#(token)"}"# }

    /// A raw client through the upgrade and the hello.
    func client() throws -> RawWebSocket {
        let raw = try RawWebSocket(port: server.port)
        let head = try #require(raw.upgrade())
        try #require(head.first == "HTTP/1.1 101 Switching Protocols")
        raw.sendText(hello)
        try #require(raw.readText() == #"{"v":1,"type":"welcome"}"#)
        return raw
    }

    func finish() { server.stop() }
}

/// Upgrade requests the server refuses.
enum BadRequest: String, CaseIterable {
    case missingKey, keyNot16Bytes, keyNotBase64, missingUpgrade, version8, disallowedOrigin, headOver8KiB

    var text: String {
        switch self {
        case .missingKey: RawWebSocket.request(omitting: ["Sec-WebSocket-Key"])
        case .keyNot16Bytes: RawWebSocket.request(["Sec-WebSocket-Key: bm90IDE2IGJ5dGVz"])
        case .keyNotBase64: RawWebSocket.request(["Sec-WebSocket-Key: %%%"])
        case .missingUpgrade: RawWebSocket.request(omitting: ["Upgrade"])
        case .version8: RawWebSocket.request(["Sec-WebSocket-Version: 8"])
        case .disallowedOrigin: RawWebSocket.request(["Origin: http://evil.example"])
        case .headOver8KiB: "GET / HTTP/1.1\r\nHost: x\r\n" + String(repeating: "X-Pad: \(String(repeating: "p", count: 100))\r\n", count: 90)
        }
    }

    var status: String {
        switch self {
        case .missingKey, .keyNot16Bytes, .keyNotBase64, .missingUpgrade: "HTTP/1.1 400 Bad Request"
        case .version8: "HTTP/1.1 426 Upgrade Required"
        case .disallowedOrigin: "HTTP/1.1 403 Forbidden"
        case .headOver8KiB: "HTTP/1.1 431 Request Header Fields Too Large"
        }
    }
}

@Suite struct ControlWebSocketHandshakeTests {
    @Test func upgradeHelloMessagesBothWays() throws {
        let fixture = try Fixture()
        defer { fixture.finish() }
        #expect(fixture.server.port != 0)
        let raw = try RawWebSocket(port: fixture.server.port)
        let head = try #require(raw.upgrade())
        #expect(head.first == "HTTP/1.1 101 Switching Protocols")
        #expect(head.contains("Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo="))
        #expect(head.contains("Upgrade: websocket"))
        raw.sendText(fixture.hello)
        #expect(raw.readText() == #"{"v":1,"type":"welcome"}"#)
        #expect(fixture.server.clientCount == 1)
        raw.sendText(#"{"n":1,"text":"héllo"}"#)
        let lines = fixture.recorder.waitForLines(1)
        #expect(lines.map { String(decoding: $0.1, as: UTF8.self) } == [#"{"n":1,"text":"héllo"}"#])
        let id = try #require(lines.first?.0)
        fixture.server.send(Data(#"{"event":1}"#.utf8), to: id)
        fixture.server.broadcast(Data(#"{"event":2}"#.utf8))
        #expect(raw.readText() == #"{"event":1}"#)
        #expect(raw.readText() == #"{"event":2}"#)
        fixture.server.close(id)
        #expect(raw.readCloseCode() == 1000)
        #expect(raw.closesConnection())
        #expect(fixture.recorder.waitForCloses(1))
        #expect(fixture.recorder.closedClients == [id])
        #expect(fixture.server.clientCount == 0)
    }

    @Test func handshakeAndFramesByteByByte() throws {
        let fixture = try Fixture()
        defer { fixture.finish() }
        let raw = try RawWebSocket(port: fixture.server.port)
        #expect(raw.upgrade(byteByByte: true)?.first == "HTTP/1.1 101 Switching Protocols")
        raw.send(.text, Data(fixture.hello.utf8), byteByByte: true)
        #expect(raw.readText() == #"{"v":1,"type":"welcome"}"#)
        raw.send(.text, Data(repeating: 0x61, count: 300), byteByByte: true)  // a 16-bit length
        raw.send(.text, Data(#"{"n":2}"#.utf8), byteByByte: true)
        #expect(fixture.recorder.waitForLines(2).map(\.1) == [Data(repeating: 0x61, count: 300), Data(#"{"n":2}"#.utf8)])
    }

    @Test func requestAndHelloInOneWrite() throws {
        let fixture = try Fixture()
        defer { fixture.finish() }
        let raw = try RawWebSocket(port: fixture.server.port)
        raw.write(Array(RawWebSocket.request().utf8) + WebSocketFrameEncoder.encode(
            WebSocketFrame(.text, Data(fixture.hello.utf8)), maskingKey: [1, 2, 3, 4]))
        #expect(raw.readResponseHead()?.first == "HTTP/1.1 101 Switching Protocols")
        #expect(raw.readText() == #"{"v":1,"type":"welcome"}"#)
    }

    @Test func wrongTokenIsRefused() throws {
        let fixture = try Fixture()
        defer { fixture.finish() }
        let raw = try RawWebSocket(port: fixture.server.port)
        #expect(raw.upgrade()?.first == "HTTP/1.1 101 Switching Protocols")
        raw.sendText(#"{"v":1,"type":"hello","token":"\#(String(repeating: "0", count: 64))"}"#)
        let answer = try #require(raw.readText())
        #expect(answer.contains(#""code":"unauthorized""#))
        #expect(answer.contains("The token is wrong"))
        #expect(raw.readCloseCode() == 1008)
        #expect(raw.closesConnection())
        #expect(fixture.server.clientCount == 0)
        #expect(fixture.recorder.closedClients.isEmpty)
    }

    @Test func noHelloInTimeIsRefused() throws {
        let fixture = try Fixture(limits: ControlLimits(helloTimeout: 0.2))
        defer { fixture.finish() }
        let raw = try RawWebSocket(port: fixture.server.port)
        #expect(raw.upgrade()?.first == "HTTP/1.1 101 Switching Protocols")
        #expect(raw.readText()?.contains("No hello came") == true)
        #expect(raw.readCloseCode() == 1008)
        let silent = try RawWebSocket(port: fixture.server.port)  // not even a request
        #expect(silent.readResponseHead()?.first == "HTTP/1.1 408 Request Timeout")
    }

    @Test(arguments: BadRequest.allCases)
    func badRequestsAreRefused(request: BadRequest) throws {
        let fixture = try Fixture(allowedOrigins: ["http://localhost:8080"])
        defer { fixture.finish() }
        let raw = try RawWebSocket(port: fixture.server.port)
        let head = try #require(raw.upgrade(request.text))
        #expect(head.first == request.status)
        if request == .version8 { #expect(head.contains("Sec-WebSocket-Version: 13")) }
        _ = raw.readToEOF()  // the body, then the server closes
        #expect(fixture.server.clientCount == 0)
    }

    @Test func anAllowedOriginIsServed() throws {
        let fixture = try Fixture(allowedOrigins: ["http://localhost:8080"])
        defer { fixture.finish() }
        let raw = try RawWebSocket(port: fixture.server.port)
        #expect(raw.upgrade(RawWebSocket.request(["Origin: http://localhost:8080"]))?.first == "HTTP/1.1 101 Switching Protocols")
        raw.sendText(fixture.hello)
        #expect(raw.readText() == #"{"v":1,"type":"welcome"}"#)
    }

    @Test func aNonLoopbackHostIsRefusedWithoutTLS() {
        #expect(throws: ControlWebSocketServerError.notLoopback(host: "0.0.0.0")) {
            try ControlWebSocketServer(host: "0.0.0.0", port: 0, token: "t", onLine: { _, _ in })
        }
        #expect(throws: ControlWebSocketServerError.notAnAddress(host: "example.com")) {
            try ControlWebSocketServer(host: "example.com", port: 0, token: "t", onLine: { _, _ in })
        }
    }

    @Test("with TLS: the page's and socket's URLs are https:// and wss://; a missing key or certificate is said before binding")
    func overTLS() throws {
        let files = try TLSCertificateFiles.make()
        let server = try ControlWebSocketServer(
            port: 0, token: "t", site: WebSite(pages: ["/": WebPage(contentType: "text/plain", body: Data("hi".utf8))]),
            tls: TLSConfiguration(certificatePath: files.certificate, privateKeyPath: files.key), onLine: { _, _ in })
        defer { server.stop() }
        #expect(server.isSecure)
        #expect(server.pageURL == "https://127.0.0.1:\(server.port)/")
        #expect(server.socketURL == "wss://127.0.0.1:\(server.port)/ws")
        do {
            _ = try ControlWebSocketServer(
                port: 0, token: "t", tls: TLSConfiguration(certificatePath: files.certificate, privateKeyPath: files.certificate + ".none"),
                onLine: { _, _ in })
            Issue.record("a missing key was taken")
        } catch {
            #expect("\(error)".contains(".none"), "\(error)")
        }
    }

    @Test func extraClientsAreTurnedAway() throws {
        let fixture = try Fixture(limits: ControlLimits(maxClients: 1))
        defer { fixture.finish() }
        let first = try fixture.client()
        let second = try RawWebSocket(port: fixture.server.port)
        #expect(second.upgrade()?.first == "HTTP/1.1 101 Switching Protocols")
        #expect(second.readText()?.contains(#""code":"tooManyClients""#) == true)
        #expect(second.readCloseCode() == 1013)
        first.sendText("{}")
        #expect(fixture.recorder.waitForLines(1).count == 1)
    }
}

@Suite struct ControlWebSocketFrameHandlingTests {
    @Test func anUnmaskedFrameIsAProtocolError() throws {
        let fixture = try Fixture()
        defer { fixture.finish() }
        let raw = try fixture.client()
        raw.send(.text, Data("{}".utf8), masked: false)
        #expect(raw.readCloseCode() == 1002)
        #expect(raw.closesConnection())
        #expect(fixture.recorder.waitForCloses(1))
    }

    @Test func aFragmentedMessageIsReassembledAroundAPing() throws {
        let fixture = try Fixture()
        defer { fixture.finish() }
        let raw = try fixture.client()
        raw.send(.text, Data(#"{"n":"#.utf8), isFinal: false)
        raw.send(.continuation, Data("12".utf8), isFinal: false)
        raw.send(.ping, Data("are you there".utf8))  // control frames may come between fragments
        raw.send(.continuation, Data("3}".utf8))
        let pong = try #require(raw.readFrame())
        #expect(pong == WebSocketFrame(.pong, Data("are you there".utf8)))
        #expect(fixture.recorder.waitForLines(1).map(\.1) == [Data(#"{"n":123}"#.utf8)])
    }

    @Test func pingIsAnsweredWithPong() throws {
        let fixture = try Fixture()
        defer { fixture.finish() }
        let raw = try fixture.client()
        raw.send(.ping, Data([1, 2, 3]))
        #expect(raw.readFrame() == WebSocketFrame(.pong, Data([1, 2, 3])))
        raw.send(.pong, Data())  // unsolicited: ignored
        raw.sendText("{}")
        #expect(fixture.recorder.waitForLines(1).count == 1)
    }

    @Test func oversizeMessagesCloseWith1009() throws {
        let fixture = try Fixture(limits: ControlLimits(maxLineBytes: 1024))
        defer { fixture.finish() }
        // One frame over the limit.
        let raw = try fixture.client()
        raw.send(.text, Data(repeating: 0x61, count: 1024))  // exactly the limit: fine
        #expect(fixture.recorder.waitForLines(1).count == 1)
        raw.send(.text, Data(repeating: 0x61, count: 5000))
        #expect(raw.readText()?.contains(#""code":"frameTooLarge""#) == true)
        #expect(raw.readCloseCode() == 1009)
        #expect(raw.closesConnection())
        // Fragments that add up to more than the limit.
        let fragmented = try fixture.client()
        fragmented.send(.text, Data(repeating: 0x61, count: 600), isFinal: false)
        fragmented.send(.continuation, Data(repeating: 0x61, count: 600))
        #expect(fragmented.readText()?.contains(#""code":"frameTooLarge""#) == true)
        #expect(fragmented.readCloseCode() == 1009)
        #expect(fixture.recorder.waitForCloses(2))
        #expect(fixture.recorder.waitForLines(1).count == 1)
    }

    @Test func binaryClosesWith1003AndInvalidUTF8With1007() throws {
        let fixture = try Fixture()
        defer { fixture.finish() }
        let binary = try fixture.client()
        binary.send(.binary, Data([0, 1, 2]))
        #expect(binary.readCloseCode() == 1003)
        let invalid = try fixture.client()
        invalid.send(.text, Data([0x7B, 0xFF, 0x7D]))
        #expect(invalid.readCloseCode() == 1007)
        // A multi-byte character split across fragments is still valid.
        let split = try fixture.client()
        let text = Array("{\"é\":1}".utf8)
        split.send(.text, Data(text[0..<3]), isFinal: false)
        split.send(.continuation, Data(text[3...]))
        #expect(fixture.recorder.waitForLines(1).map(\.1) == [Data(text)])
        #expect(fixture.recorder.waitForCloses(2))
    }

    @Test func fragmentationAndCloseFaultsAreProtocolErrors() throws {
        let fixture = try Fixture()
        defer { fixture.finish() }
        let stray = try fixture.client()
        stray.send(.continuation, Data("x".utf8))
        #expect(stray.readCloseCode() == 1002)
        let interleaved = try fixture.client()
        interleaved.send(.text, Data("{".utf8), isFinal: false)
        interleaved.send(.text, Data("{}".utf8))
        #expect(interleaved.readCloseCode() == 1002)
        let badCode = try fixture.client()
        badCode.send(.close, Data([0x03, 0xED]))  // 1005 may not be sent
        #expect(badCode.readCloseCode() == 1002)
        let oneByte = try fixture.client()
        oneByte.send(.close, Data([0x03]))
        #expect(oneByte.readCloseCode() == 1002)
        #expect(fixture.recorder.waitForCloses(4))
        #expect(fixture.recorder.waitForLines(0).isEmpty)
    }

    @Test func aCloseFrameIsEchoed() throws {
        let fixture = try Fixture()
        defer { fixture.finish() }
        let raw = try fixture.client()
        raw.send(.close, Data([0x03, 0xE8]) + Data("bye".utf8))
        #expect(raw.readCloseCode() == 1000)
        #expect(raw.closesConnection())
        #expect(fixture.recorder.waitForCloses(1))
    }

    @Test func stopClosesEverything() throws {
        let fixture = try Fixture()
        let clients = try (0..<3).map { _ in try fixture.client() }
        let pending = try RawWebSocket(port: fixture.server.port)  // still in the handshake
        #expect(fixture.server.clientCount == 3)
        fixture.server.stop()
        for client in clients {
            #expect(client.readCloseCode() == 1001)
            #expect(client.closesConnection())
        }
        #expect(pending.closesConnection())
        #expect(throws: (any Error).self) { try RawWebSocket(port: fixture.server.port) }
        fixture.server.stop()  // idempotent
        #expect(fixture.recorder.closedClients.isEmpty)
    }
}
