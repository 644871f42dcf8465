import Foundation

/// One file a ``ControlWebSocketServer`` serves beside its WebSocket: its media type and its bytes.
public struct WebPage: Sendable, Hashable {
    /// The `Content-Type` ("text/html; charset=utf-8").
    public let contentType: String
    /// The bytes.
    public let body: Data

    /// A page of `contentType` made of `body`.
    public init(contentType: String, body: Data) {
        self.contentType = contentType
        self.body = body
    }

    /// The media type of a file named `name`, by its extension (HTML, JavaScript modules, CSS, SVG, JSON, PNG);
    /// `application/octet-stream` for any other.
    public static func contentType(forFileName name: String) -> String {
        switch name.split(separator: ".").last.map({ $0.lowercased() }) {
        case "html": "text/html; charset=utf-8"
        case "js", "mjs": "text/javascript; charset=utf-8"
        case "css": "text/css; charset=utf-8"
        case "svg": "image/svg+xml"
        case "json": "application/json"
        case "png": "image/png"
        default: "application/octet-stream"
        }
    }
}

/// The pages a ``ControlWebSocketServer`` serves on its port (a web frontend), and the path that upgrades to the
/// WebSocket. Every other path is 404, every method but GET 405. Pages go out with `Content-Security-Policy`
/// (`default-src 'self'`, `connect-src` the socket), `X-Frame-Options: DENY` and `Cache-Control: no-store`, and
/// only to a `Host` naming the listener itself (127.0.0.1, localhost or [::1] with its port; with TLS also the names
/// its certificate is for), so a DNS-rebound name gets 421 rather than the page.
public struct WebSite: Sendable, Hashable {
    /// Pages by absolute path ("/", "/app.js"): matched exactly, so `/../` and its encodings are simply 404.
    public let pages: [String: WebPage]
    /// The path that upgrades to the WebSocket ("/ws").
    public let socketPath: String

    /// A site of `pages`, upgrading on `socketPath`.
    public init(pages: [String: WebPage], socketPath: String = "/ws") {
        precondition(pages[socketPath] == nil, "the WebSocket path \(socketPath) cannot also be a page")
        self.pages = pages
        self.socketPath = socketPath
    }

    /// The `Host` values (and so the origins, with `http://` or `https://`) under which a listener on `host`:`port`
    /// serves pages: the address it is bound to (unless a wildcard) and, for 127.0.0.1 and ::1, `localhost`; with TLS,
    /// also each of `certificateNames` but wildcards (a browser checks the certificate, so a rebound name fails there);
    /// on the scheme's default port (`secure`: 443, else 80) without the port, as browsers write them.
    static func hosts(listening host: String, port: UInt16, certificateNames: [String] = [], secure: Bool = false) -> Set<String> {
        // Browsers leave the scheme's default port out of Host and Origin (443 for https, 80 for http).
        let isDefault = port == (secure ? 443 : 80)
        func withPort(_ name: String) -> String {
            let bracketed = name.contains(":") ? "[\(name)]" : name
            return isDefault ? bracketed : "\(bracketed):\(port)"
        }
        let bare = host.hasPrefix("[") ? String(host.dropFirst().dropLast()) : host
        var names: Set<String> = bare == "0.0.0.0" || bare == "::" ? [] : [withPort(bare)]
        names.formUnion(certificateNames.filter { !$0.contains("*") }.map { withPort($0.lowercased()) })
        if bare == "127.0.0.1" || bare == "::1" || bare == "localhost" {
            names.formUnion([withPort("127.0.0.1"), withPort("localhost")])
        }
        if bare == "::1" { names.insert(withPort("::1")) }
        return names
    }

    /// Answers a GET for a page: 200 with the page, 404, or 421 for a `Host` that is not one of `hosts`. `secure`: the
    /// connection is TLS, and the page's socket is `wss://`.
    func answer(_ request: HTTPRequestHead, hosts: Set<String>, secure: Bool = false) -> (status: Int, response: Data) {
        guard let values = request.headers["host"], values.count == 1, let host = values.first?.lowercased(),
            hosts.contains(host)
        else {
            let served = hosts.sorted().map { "\(secure ? "https" : "http")://\($0)/" }.joined(separator: " or ")
            return Self.respond(421, "this page is served as \(served)", connect: nil)
        }
        guard let page = pages[String(request.path)] else {
            return Self.respond(404, "no such page: parleyd serves / and its files, and the control API on \(socketPath)", connect: nil)
        }
        return Self.respond(200, page, connect: "\(secure ? "wss" : "ws")://\(host)\(socketPath)")
    }

    private static func respond(_ status: Int, _ text: String, connect: String?) -> (status: Int, response: Data) {
        respond(status, WebPage(contentType: "text/plain; charset=utf-8", body: Data((text + "\n").utf8)), connect: connect)
    }

    private static func respond(_ status: Int, _ page: WebPage, connect: String?) -> (status: Int, response: Data) {
        let policy = "default-src 'self'; connect-src " + (connect.map { "'self' \($0)" } ?? "'none'")
            + "; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
        let head = "HTTP/1.1 \(status) \(HTTPStatus.phrase(status))\r\n"
            + "Content-Type: \(page.contentType)\r\nContent-Length: \(page.body.count)\r\n"
            + "Content-Security-Policy: \(policy)\r\nX-Frame-Options: DENY\r\nX-Content-Type-Options: nosniff\r\n"
            + "Referrer-Policy: no-referrer\r\nCache-Control: no-store\r\nConnection: close\r\n\r\n"
        return (status, Data(head.utf8) + page.body)
    }
}

/// Reason phrases of the statuses the WebSocket listener sends.
enum HTTPStatus {
    static func phrase(_ status: Int) -> String {
        switch status {
        case 101: "Switching Protocols"
        case 200: "OK"
        case 400: "Bad Request"
        case 403: "Forbidden"
        case 404: "Not Found"
        case 405: "Method Not Allowed"
        case 408: "Request Timeout"
        case 421: "Misdirected Request"
        case 426: "Upgrade Required"
        case 431: "Request Header Fields Too Large"
        default: "Error"
        }
    }
}
