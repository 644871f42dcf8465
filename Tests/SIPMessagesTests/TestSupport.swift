import Foundation
import Testing

@testable import SIPMessages

/// The RFC 4475 torture messages: `Tests/TestData/rfc4475` in the package (the RFC's published archive, CRLF-exact;
/// its INDEX.md says where they come from and what each expects).
enum TortureCorpus {
    /// The folder, found from this file's path: Tests/SIPMessagesTests/ → Tests/TestData/rfc4475.
    static let folder: URL = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("TestData/rfc4475", isDirectory: true)

    /// The names (without `.sip`) of every message file in the folder, sorted; a missing folder fails the test.
    static func names() throws -> [String] {
        let files = try FileManager.default.contentsOfDirectory(atPath: folder.path)
        return files.filter { $0.hasSuffix(".sip") }.map { String($0.dropLast(4)) }.sorted()
    }

    /// The bytes of one message, exactly as stored.
    static func bytes(_ name: String) throws -> Data {
        try Data(contentsOf: folder.appendingPathComponent("\(name).sip"))
    }

    /// The messages that must parse, parsed.
    static func parsedMessages() throws -> [(name: String, message: SIPMessage)] {
        try names().compactMap { name in
            guard let message = try? SIPMessage.parse(bytes(name)) else { return nil }
            return (name, message)
        }
    }
}

/// Builds a message from CRLF-joined lines.
func sipBytes(_ lines: [String], body: String = "") -> Data {
    Data((lines.joined(separator: "\r\n") + "\r\n\r\n" + body).utf8)
}

/// A small valid INVITE's lines, to vary in tests.
let basicInviteLines = [
    "INVITE sip:bob@example.com SIP/2.0",
    "Via: SIP/2.0/UDP 192.0.2.1:5060;branch=z9hG4bK776asdhds;rport",
    "Max-Forwards: 70",
    "To: Bob <sip:bob@example.com>",
    "From: \"Alice\" <sip:alice@example.org>;tag=1928301774",
    "Call-ID: a84b4c76e66710@pc33.example.org",
    "CSeq: 314159 INVITE",
    "Contact: <sip:alice@192.0.2.1:5060>",
    "Content-Length: 0",
]

/// Parses `data`, returning the error (or nil when it parsed).
func parseError(_ data: Data, memo: SIPParseMemo? = nil) -> SIPParseError? {
    do {
        _ = try SIPMessage.parse(data, memo: memo)
        return nil
    } catch {
        return error
    }
}
