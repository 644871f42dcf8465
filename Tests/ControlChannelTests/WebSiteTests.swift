import Foundation
import Testing

@testable import ControlChannel

/// The pages a WebSocket listener serves beside its socket (pure: the handshake's answers).
@Suite struct WebSiteTests {
    private let site = WebSite(pages: [
        "/": WebPage(contentType: WebPage.contentType(forFileName: "index.html"), body: Data("<p>hi</p>".utf8)),
        "/app.js": WebPage(contentType: WebPage.contentType(forFileName: "app.js"), body: Data("export {};".utf8)),
    ])
    private let hosts: Set<String> = ["127.0.0.1:8088", "localhost:8088"]
    private let upgradeHeaders = [
        "Upgrade: websocket", "Connection: Upgrade", "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==", "Sec-WebSocket-Version: 13",
    ]

    private func answer(_ target: String, method: String = "GET", host: String = "127.0.0.1:8088", headers: [String] = [])
        -> (status: Int, text: String)
    {
        let head = "\(method) \(target) HTTP/1.1\r\nHost: \(host)\r\n" + headers.map { $0 + "\r\n" }.joined() + "\r\n"
        switch WebSocketHandshake.answer(Array(head.utf8), allowedOrigins: [], site: site, pageHosts: hosts) {
        case .accept(let response): return (101, String(decoding: response, as: UTF8.self))
        case .serve(let status, let response), .refuse(let status, _, let response):
            return (status, String(decoding: response, as: UTF8.self))
        }
    }

    private func header(_ name: String, in response: String) -> String? {
        response.components(separatedBy: "\r\n").first { $0.lowercased().hasPrefix(name.lowercased() + ":") }
            .map { String($0.dropFirst(name.count + 1)).trimmingCharacters(in: .whitespaces) }
    }

    @Test func pagesGoOutWithTheirTypeAndTheSecurityHeaders() {
        let page = answer("/")
        #expect(page.status == 200)
        #expect(page.text.hasPrefix("HTTP/1.1 200 OK\r\n"))
        #expect(page.text.hasSuffix("\r\n\r\n<p>hi</p>"))
        #expect(header("Content-Type", in: page.text) == "text/html; charset=utf-8")
        #expect(header("Content-Length", in: page.text) == "9")
        #expect(header("X-Frame-Options", in: page.text) == "DENY")
        #expect(header("Cache-Control", in: page.text) == "no-store")
        let policy = header("Content-Security-Policy", in: page.text) ?? ""
        #expect(policy.hasPrefix("default-src 'self'; connect-src 'self' ws://127.0.0.1:8088/ws;"))
        #expect(policy.contains("frame-ancestors 'none'"))
        let script = answer("/app.js?v=2", host: "localhost:8088")
        #expect(script.status == 200)
        #expect(header("Content-Type", in: script.text) == "text/javascript; charset=utf-8")
        #expect(header("Content-Security-Policy", in: script.text)?.contains("connect-src 'self' ws://localhost:8088/ws") == true)
    }

    @Test(arguments: [
        "/index.html", "/../", "/%2e%2e/etc/passwd", "/..%2f..%2fetc%2fpasswd", "/app.js/../", "//etc/passwd", "/./app.js",
        "/APP.JS", "/app.js%00", "/favicon.ico",
    ])
    func everyOtherPathIs404(path: String) {
        let answered = answer(path)
        #expect(answered.status == 404)
        #expect(header("Content-Type", in: answered.text) == "text/plain; charset=utf-8")
        #expect(header("X-Frame-Options", in: answered.text) == "DENY")
    }

    @Test("over TLS the page's socket is wss:// and the 421 names https:// pages")
    func secure() {
        let head = "GET / HTTP/1.1\r\nHost: phone.test:8443\r\n\r\n"
        guard case .serve(200, let page) = WebSocketHandshake.answer(
            Array(head.utf8), allowedOrigins: [], site: site, pageHosts: ["phone.test:8443"], secure: true)
        else {
            Issue.record("the page was not served")
            return
        }
        #expect(header("Content-Security-Policy", in: String(decoding: page, as: UTF8.self))?.contains("connect-src 'self' wss://phone.test:8443/ws") == true)
        let other = "GET / HTTP/1.1\r\nHost: other.test:8443\r\n\r\n"
        guard case .serve(421, let refusal) = WebSocketHandshake.answer(
            Array(other.utf8), allowedOrigins: [], site: site, pageHosts: ["phone.test:8443"], secure: true)
        else {
            Issue.record("another name was served")
            return
        }
        #expect(String(decoding: refusal, as: UTF8.self).contains("https://phone.test:8443/"))
    }

    @Test("the names pages are served under: the listener's address, localhost for loopback, a certificate's names but wildcards; none for a wildcard address")
    func hostNames() {
        #expect(WebSite.hosts(listening: "127.0.0.1", port: 8088) == ["127.0.0.1:8088", "localhost:8088"])
        #expect(WebSite.hosts(listening: "::1", port: 8088) == ["[::1]:8088", "127.0.0.1:8088", "localhost:8088"])
        #expect(WebSite.hosts(listening: "192.0.2.7", port: 8443, certificateNames: ["Phone.Test", "*.test", "2001:db8::1"])
            == ["192.0.2.7:8443", "phone.test:8443", "[2001:db8::1]:8443"])
        #expect(WebSite.hosts(listening: "0.0.0.0", port: 8443, certificateNames: ["phone.test"]) == ["phone.test:8443"])
        #expect(WebSite.hosts(listening: "::", port: 8443).isEmpty)
        #expect(WebSite.hosts(listening: "0.0.0.0", port: 443, certificateNames: ["phone.test"], secure: true) == ["phone.test"],
                "browsers leave the default port out")
        #expect(WebSite.hosts(listening: "127.0.0.1", port: 80) == ["127.0.0.1", "localhost"])
    }

    @Test func aHostThatIsNotTheListenerGets421() {
        // A DNS-rebound name reaches 127.0.0.1 but says another Host: no page for it.
        #expect(answer("/", host: "evil.example:8088").status == 421)
        #expect(answer("/", host: "127.0.0.1:9999").status == 421)
        #expect(answer("/", headers: ["Host: 127.0.0.1:8088"]).status == 421)  // two Host headers
    }

    @Test func onlyGETIsAnswered() {
        for method in ["POST", "HEAD", "PUT", "DELETE", "OPTIONS", "get"] {
            let answered = answer("/", method: method)
            #expect(answered.status == 405, "\(method)")
            #expect(header("Allow", in: answered.text) == "GET", "\(method)")
        }
    }

    @Test func malformedRequestsGet400() {
        for head in ["GET /\r\n\r\n", "GET / HTTP/2\r\n\r\n", "GET x HTTP/1.1\r\n\r\n", "GET / HTTP/1.1\r\nno colon\r\n\r\n",
                     "GET  / HTTP/1.1\r\n\r\n", "\r\n\r\n"] {
            guard case .refuse(let status, _, _) = WebSocketHandshake.answer(Array(head.utf8), allowedOrigins: [], site: site, pageHosts: hosts)
            else { Issue.record("answered \(head.debugDescription)"); continue }
            #expect(status == 400, "\(head.debugDescription)")
        }
        guard case .refuse(400, _, _) = WebSocketHandshake.answer([0xFF, 0x0D, 0x0A, 0x0D, 0x0A], allowedOrigins: [], site: site) else {
            Issue.record("not UTF-8 was answered")
            return
        }
    }

    @Test func onlyTheSocketPathUpgrades() {
        #expect(answer("/ws", headers: upgradeHeaders).status == 101)
        #expect(answer("/", headers: upgradeHeaders).status == 200)  // a page, not an upgrade
        #expect(answer("/control", headers: upgradeHeaders).status == 404)
        #expect(answer("/ws").status == 400)  // no upgrade headers
        // Without a site every path upgrades, as before.
        let head = "GET /anything HTTP/1.1\r\nHost: x\r\n" + upgradeHeaders.map { $0 + "\r\n" }.joined() + "\r\n"
        guard case .accept = WebSocketHandshake.answer(Array(head.utf8), allowedOrigins: []) else {
            Issue.record("a site-less listener refused to upgrade")
            return
        }
    }

    @Test func contentTypesByExtension() {
        #expect(WebPage.contentType(forFileName: "a.css") == "text/css; charset=utf-8")
        #expect(WebPage.contentType(forFileName: "icon.SVG") == "image/svg+xml")
        #expect(WebPage.contentType(forFileName: "data.bin") == "application/octet-stream")
    }
}
