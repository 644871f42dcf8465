import Foundation
import ParleyIO

/// The server's side of the WebSocket opening handshake (RFC 6455 §4.2): reading the HTTP/1.1 request head and
/// answering it. Pure: no I/O.
public enum WebSocketHandshake {
    /// The longest request head accepted (request line and headers, up to and including the blank line): 8 KiB.
    public static let maxRequestHeadBytes = 8 * 1024
    /// The GUID RFC 6455 appends to the key before hashing.
    static let guid = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

    /// `Sec-WebSocket-Accept` for `key`: base64(SHA-1(key + GUID)).
    public static func acceptValue(forKey key: String) -> String {
        MessageDigest.sha1(Data((key + guid).utf8)).base64EncodedString()
    }

    /// Where the request head ends in `bytes`: the index just past its blank line; nil while incomplete.
    static func headEnd(in bytes: [UInt8]) -> Int? {
        guard bytes.count >= 4 else { return nil }
        for index in 3..<bytes.count
        where bytes[index] == 0x0A && bytes[index - 1] == 0x0D && bytes[index - 2] == 0x0A && bytes[index - 3] == 0x0D {
            return index + 1
        }
        return nil
    }

    /// How a request is answered.
    public enum Answer: Sendable, Hashable {
        /// Upgrade: these are the `101 Switching Protocols` response's bytes.
        case accept(response: Data)
        /// A page of the listener's ``WebSite`` (200) or its 404 or 421: the response's bytes; the connection is
        /// closed after them.
        case serve(status: Int, response: Data)
        /// Refuse with this status; the response's bytes; the connection is closed after them.
        case refuse(status: Int, reason: String, response: Data)
    }

    /// Answers the request head `head` (without its blank line or with it). Only GET is answered. With a `site`, its
    /// ``WebSite/socketPath`` upgrades and every other path is a page (or 404) for a `Host` in `pageHosts`; without
    /// one, every path upgrades. An `Origin` that is present must be in `allowedOrigins`; a request without one (not
    /// from a browser) is allowed. `secure`: the connection is TLS (pages name `https://` and `wss://`).
    public static func answer(
        _ head: [UInt8], allowedOrigins: Set<String>, site: WebSite? = nil, pageHosts: Set<String> = [], secure: Bool = false
    ) -> Answer {
        let request: HTTPRequestHead
        switch HTTPRequestHead.parse(head) {
        case .failure(let malformed): return refuse(400, malformed.reason)
        case .success(let parsed): request = parsed
        }
        guard request.method == "GET" else { return refuse(405, "only GET is answered here", extra: ["Allow: GET"]) }
        if let site, request.path != site.socketPath {
            let (status, response) = site.answer(request, hosts: pageHosts, secure: secure)
            return .serve(status: status, response: response)
        }
        return upgrade(request, allowedOrigins: allowedOrigins)
    }

    private static func upgrade(_ request: HTTPRequestHead, allowedOrigins: Set<String>) -> Answer {
        let headers = request.headers
        guard request.version == "HTTP/1.1" else { return refuse(400, "a WebSocket upgrade needs HTTP/1.1") }
        guard headers["host"]?.count == 1 else { return refuse(400, "exactly one Host header is required") }
        guard request.tokens("upgrade").contains("websocket") else { return refuse(400, "Upgrade: websocket is required") }
        guard request.tokens("connection").contains("upgrade") else { return refuse(400, "Connection: Upgrade is required") }
        guard headers["sec-websocket-version"] == ["13"] else {
            return refuse(426, "only WebSocket version 13 is supported", extra: ["Sec-WebSocket-Version: 13"])
        }
        guard let keys = headers["sec-websocket-key"], keys.count == 1, let key = keys.first,
            let decoded = Data(base64Encoded: key), decoded.count == 16
        else { return refuse(400, "Sec-WebSocket-Key must be the base64 of 16 bytes") }
        if let origins = headers["origin"] {
            guard origins.count == 1, let origin = origins.first, allowedOrigins.contains(origin) else {
                return refuse(403, "this origin may not use the control API (parleyd --allow-origin ORIGIN)")
            }
        }
        let response = "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            + "Sec-WebSocket-Accept: \(acceptValue(forKey: key))\r\n\r\n"
        return .accept(response: Data(response.utf8))
    }

    /// The head of a refusal whose request head was over ``maxRequestHeadBytes``.
    static var headTooLarge: Answer { refuse(431, "the request head is over \(maxRequestHeadBytes) bytes") }

    /// The head of a refusal of a connection that sent no complete request head in time.
    static var timedOut: Answer { refuse(408, "no request within the time allowed") }

    private static func refuse(_ status: Int, _ reason: String, extra: [String] = []) -> Answer {
        let phrase = HTTPStatus.phrase(status)
        let body = reason + "\n"
        var head = "HTTP/1.1 \(status) \(phrase)\r\nContent-Type: text/plain; charset=utf-8\r\n"
        for line in extra { head += line + "\r\n" }
        head += "Content-Length: \(body.utf8.count)\r\nConnection: close\r\n\r\n"
        return .refuse(status: status, reason: reason, response: Data((head + body).utf8))
    }
}
