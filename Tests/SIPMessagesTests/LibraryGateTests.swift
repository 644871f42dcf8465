import Foundation
import Testing

@testable import SIPMessages

/// The gate asks libosip2 only about the fields it parses into typed values; these tests hold that shortcut to the
/// library's own verdict.
@Suite struct LibraryGateTests {
    /// Values a peer could send that framing lets through (no CR, LF or controls): junk for any typed parser.
    static let junk = ["<<<", "\"unterminated", ";;;==,,", "@@@:", ",", "sip:", "a b c", "=", "<sip:a@b", "\\\"", "%00"]

    /// Fields libosip2 does not type, each with every junk value (and a compact form or two).
    static let untypedNames = [
        "Subject", "s", "User-Agent", "Server", "Supported", "k", "Require", "Proxy-Require", "Unsupported", "Expires",
        "Min-Expires", "Date", "Event", "o", "Allow-Events", "u", "Refer-To", "r", "Referred-By", "Session-Expires",
        "Retry-After", "Warning", "Timestamp", "Organization", "Priority", "Reason", "P-Asserted-Identity", "Privacy",
        "In-Reply-To", "Reply-To", "X-Anything",
    ]

    private func framed(_ name: String, _ value: String) throws -> FramedMessage {
        try MessageFraming.frame(sipBytes(basicInviteLines.dropLast() + ["\(name): \(value)", "Content-Length: 0"]))
    }

    @Test func libosip2StoresUntypedFieldsWithoutJudgingThem() throws {
        for name in Self.untypedNames {
            #expect(!OSIPMessageGate.fieldsTypedByLibrary.contains(SIPHeaders.key(for: name)), "\(name)")
            for value in Self.junk {
                let message = try framed(name, value)
                #expect(OSIPMessageGate.libraryAccepts(message) { _ in true }, "\(name): \(value)")
                #expect(OSIPMessageGate.accepts(message), "\(name): \(value)")
            }
        }
    }

    @Test func theShortcutGivesTheFullGatesVerdictOnEveryTortureMessage() throws {
        let readByParley: Set<String> = [
            "via", "from", "to", "call-id", "cseq", "max-forwards", "content-type", "content-length", "contact", "route",
            "record-route",
        ]
        var framedCount = 0
        for name in try TortureCorpus.names() {
            guard let message = try? MessageFraming.frame(TortureCorpus.bytes(name)) else { continue }
            framedCount += 1
            let everyOtherField = OSIPMessageGate.libraryAccepts(message) { !readByParley.contains($0.key) }
            #expect(OSIPMessageGate.accepts(message) == everyOtherField, "\(name)")
        }
        #expect(framedCount >= 40)
    }

    @Test func theLengthSwitchAnswersAsTheSet() {
        for key in OSIPMessageGate.fieldsTypedByLibrary { #expect(OSIPMessageGate.isTypedByLibrary(key), "\(key)") }
        let others = Self.untypedNames.map(SIPHeaders.key(for:)) + [
            "via", "from", "to", "call-id", "cseq", "max-forwards", "content-type", "content-length", "contact", "route",
            "record-route", "allowx", "accepts", "mime-versio", "", "proxy-authentication-infos",
        ]
        for key in others {
            #expect(OSIPMessageGate.isTypedByLibrary(key) == OSIPMessageGate.fieldsTypedByLibrary.contains(key), "\(key)")
        }
    }

    @Test func aCallLikeSippsParsesWithoutTheLibraryGate() throws {
        let message = try framed("Subject", "Performance Test")
        #expect(!message.fields.contains { OSIPMessageGate.fieldsTypedByLibrary.contains($0.key) })
        #expect(OSIPMessageGate.accepts(message))
    }
}
