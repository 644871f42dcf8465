import Foundation

/// One HTTP/1.x request head (RFC 9112 §2–§5): the request line and the header fields, as the WebSocket listener
/// reads them before it upgrades a connection or serves a page. Pure.
struct HTTPRequestHead: Sendable, Hashable {
    /// The method, case-sensitive as RFC 9110 §9.1 says ("GET").
    let method: String
    /// The request target as sent ("/app.js?x=1").
    let target: String
    /// "HTTP/1.1" or "HTTP/1.0".
    let version: String
    /// Header fields by lower-cased name, each value trimmed, in the order they came.
    let headers: [String: [String]]

    /// The target's path: the target up to its query; the fragment never reaches a server.
    var path: Substring { target.prefix { $0 != "?" && $0 != "#" } }

    /// The values of the comma-separated header `name`, each trimmed and lower-cased.
    func tokens(_ name: String) -> [String] {
        (headers[name] ?? []).flatMap { $0.split(separator: ",") }.map {
            $0.trimmingCharacters(in: .whitespaces).lowercased()
        }
    }

    /// Why a request head cannot be read: always answered with 400.
    struct Malformed: Error, Hashable {
        /// For people, in the response body.
        let reason: String
    }

    /// Reads `bytes` (the head with or without its blank line).
    static func parse(_ bytes: [UInt8]) -> Result<HTTPRequestHead, Malformed> {
        guard let text = String(validating: bytes, as: UTF8.self) else { return .failure(.init(reason: "the request head is not UTF-8")) }
        var lines = text.components(separatedBy: "\r\n")
        while lines.last?.isEmpty == true { lines.removeLast() }
        guard !lines.isEmpty else { return .failure(.init(reason: "an empty request")) }
        let requestLine = lines.removeFirst().split(separator: " ", omittingEmptySubsequences: false)
        guard requestLine.count == 3, requestLine[2] == "HTTP/1.1" || requestLine[2] == "HTTP/1.0",
            !requestLine[0].isEmpty, requestLine[1].hasPrefix("/")
        else { return .failure(.init(reason: "not an HTTP/1.1 request line")) }
        var headers: [String: [String]] = [:]
        for line in lines {
            guard let colon = line.firstIndex(of: ":"), colon != line.startIndex,
                !line[..<colon].contains(where: { $0 == " " || $0 == "\t" })
            else { return .failure(.init(reason: "a malformed header line")) }
            let name = line[..<colon].lowercased()
            let value = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            headers[name, default: []].append(value)
        }
        return .success(
            HTTPRequestHead(
                method: String(requestLine[0]), target: String(requestLine[1]), version: String(requestLine[2]),
                headers: headers))
    }
}
