import ControlChannel
import Foundation
import ParleyTestSupport
import Testing

/// A WebSocket listener that serves pages beside its socket, over real loopback connections.
@Suite struct ControlWebSocketSiteTests {
    private let token = String(repeating: "k", count: 64)
    private let site = WebSite(pages: ["/": WebPage(contentType: "text/html; charset=utf-8", body: Data("<p>page</p>".utf8))])

    private func server(limits: ControlLimits = .init()) throws -> ControlWebSocketServer {
        try ControlWebSocketServer(port: 0, token: token, site: site, limits: limits, onLine: { _, _ in })
    }

    private func get(_ target: String, port: UInt16, host: String? = nil) throws -> String {
        let raw = try RawWebSocket(port: port)
        raw.write(Array("GET \(target) HTTP/1.1\r\nHost: \(host ?? "127.0.0.1:\(port)")\r\n\r\n".utf8))
        return raw.readToEOF()
    }

    @Test func aPageIsServedAndTheConnectionClosed() throws {
        let server = try server()
        defer { server.stop() }
        let response = try get("/", port: server.port)
        #expect(response.hasPrefix("HTTP/1.1 200 OK\r\n"))
        #expect(response.hasSuffix("<p>page</p>"))
        #expect(response.contains("\r\nContent-Security-Policy: default-src 'self'; connect-src 'self' ws://127.0.0.1:\(server.port)/ws;"))
        #expect(try get("/", port: server.port, host: "localhost:\(server.port)").hasPrefix("HTTP/1.1 200 OK\r\n"))
        #expect(try get("/../etc/passwd", port: server.port).hasPrefix("HTTP/1.1 404 Not Found\r\n"))
        #expect(server.clientCount == 0)
    }

    @Test func thePagesOwnOriginMayUseTheSocketAndOthersMayNot() throws {
        let server = try server()
        defer { server.stop() }
        for origin in ["http://127.0.0.1:\(server.port)", "http://localhost:\(server.port)"] {
            let raw = try RawWebSocket(port: server.port)
            #expect(raw.upgrade(RawWebSocket.request(["Origin: \(origin)"]))?.first == "HTTP/1.1 101 Switching Protocols")
            raw.sendText(#"{"v":1,"type":"hello","token":"\#(token)"}"#)
            #expect(raw.readText() == #"{"v":1,"type":"welcome"}"#)
        }
        for origin in ["http://127.0.0.1:1", "http://evil.example", "null"] {
            let raw = try RawWebSocket(port: server.port)
            #expect(raw.upgrade(RawWebSocket.request(["Origin: \(origin)"]))?.first == "HTTP/1.1 403 Forbidden", "\(origin)")
        }
        let elsewhere = try RawWebSocket(port: server.port)
        #expect(elsewhere.upgrade(RawWebSocket.request(["Host: 127.0.0.1:\(server.port)"], path: "/control"))?.first == "HTTP/1.1 404 Not Found")
    }

    @Test func slowAndOversizedRequestsAreAnsweredAndClosed() throws {
        let server = try server(limits: ControlLimits(helloTimeout: 0.3))
        defer { server.stop() }
        let slow = try RawWebSocket(port: server.port)
        slow.write(Array("GET / HTTP/1.1\r\nHo".utf8))  // slowloris: a head that never ends
        #expect(slow.readResponseHead()?.first == "HTTP/1.1 408 Request Timeout")
        #expect(slow.closesConnection())
        let long = try RawWebSocket(port: server.port)
        long.write(Array("GET /\(String(repeating: "a", count: 9000)) HTTP/1.1\r\n".utf8))
        #expect(long.readResponseHead()?.first == "HTTP/1.1 431 Request Header Fields Too Large")
        #expect(long.closesConnection())
        // The loop was never stalled: the page is still served at once.
        #expect(try get("/", port: server.port).hasPrefix("HTTP/1.1 200 OK\r\n"))
    }

    @Test func thePageIsServedEvenWhenEverySlotIsTaken() throws {
        let server = try server(limits: ControlLimits(maxClients: 1))
        defer { server.stop() }
        let first = try RawWebSocket(port: server.port)
        #expect(first.upgrade()?.first == "HTTP/1.1 101 Switching Protocols")
        first.sendText(#"{"v":1,"type":"hello","token":"\#(token)"}"#)
        #expect(first.readText() == #"{"v":1,"type":"welcome"}"#)
        #expect(try get("/", port: server.port).hasPrefix("HTTP/1.1 200 OK\r\n"))
    }
}
