import Foundation
import Testing

@testable import SIPMessages

/// Every RFC 4475 torture message gets the verdict and response `Tests/TestData/rfc4475/INDEX.md` names.
@Suite("RFC 4475 torture messages")
struct TortureTests {
    /// What INDEX.md asks of one message, with Parley's choice where it says "either".
    enum Expected: Equatable, Sendable {
        /// Must parse.
        case parse
        /// Must parse; a user agent server then answers 416 (`checkURIScheme`).
        case parseThen416
        /// Must be refused with this suggestion.
        case reject(SIPSuggestedResponse)
        /// INDEX.md allows either; Parley's documented choice.
        case either(choice: Choice)
    }

    /// Parley's choice for an "either" message.
    enum Choice: Equatable, Sendable {
        case parse
        case reject(SIPSuggestedResponse)

        var expected: Expected {
            switch self {
            case .parse: .parse
            case .reject(let response): .reject(response)
            }
        }
    }

    /// The table of INDEX.md, all 50 files.
    static let table: [String: Expected] = [
        // 3.1.1 valid messages
        "wsinv": .parse, "intmeth": .parse, "esc01": .parse, "escnull": .parse, "esc02": .parse, "lwsdisp": .parse,
        "longreq": .parse, "dblreq": .parse, "semiuri": .parse, "transports": .parse, "mpart01": .parse,
        "unreason": .parse, "noreason": .parse,
        // 3.1.2 invalid messages
        "badinv01": .reject(.badRequest), "clerr": .reject(.badRequest), "ncl": .reject(.badRequest),
        "scalar02": .reject(.badRequest), "scalarlg": .reject(.drop), "quotbal": .reject(.badRequest),
        "ltgtruri": .reject(.badRequest), "lwsruri": .reject(.badRequest),
        // Extra SP in the Request-Line, trailing SP, URI headers in the Request-URI, spaces inside <>, and a URI with
        // '?' outside <>: refused (nothing we would ever forward). A bad Date: accepted, Date is carried not judged.
        "lwsstart": .either(choice: .reject(.badRequest)), "trws": .either(choice: .reject(.badRequest)),
        "escruri": .either(choice: .reject(.badRequest)), "baddate": .either(choice: .parse),
        "regbadct": .either(choice: .reject(.badRequest)), "badaspec": .either(choice: .reject(.badRequest)),
        "baddn": .reject(.badRequest), "badvers": .reject(.versionNotSupported), "mismatch01": .reject(.badRequest),
        "mismatch02": .reject(.badRequest), "bigcode": .reject(.drop),
        // 3.2 transaction layer
        "badbranch": .parse,
        // 3.3 application layer
        "insuf": .reject(.badRequest), "unkscm": .parseThen416, "novelsc": .parseThen416, "unksm2": .parse,
        "bext01": .parse, "invut": .parse, "regaut01": .parse, "multi01": .reject(.badRequest),
        "mcl01": .reject(.badRequest), "bcast": .parse, "zeromf": .parse, "cparam01": .parse, "cparam02": .parse,
        "regescrt": .parse, "sdp01": .parse,
        // 3.4 backward compatibility
        "inv2543": .parse,
        // Stray file: no Via, no CSeq, a Request-Line without a version.
        "test": .reject(.badRequest),
    ]

    @Test("the folder holds exactly the 50 messages of the table")
    func folderMatchesTable() throws {
        let names = try TortureCorpus.names()
        #expect(names.count == 50)
        #expect(Set(names) == Set(Self.table.keys))
    }

    @Test("every message gets its verdict and response")
    func everyVerdict() throws {
        var matched = 0
        for name in try TortureCorpus.names() {
            let expected = try #require(Self.table[name], "\(name) is not in the table")
            if try check(name, expected) { matched += 1 }
        }
        #expect(matched == 50)
    }

    private func check(_ name: String, _ expected: Expected) throws -> Bool {
        let bytes = try TortureCorpus.bytes(name)
        let outcome = Result { () throws(SIPParseError) in try SIPMessage.parse(bytes) }
        switch expected {
        case .either(let choice):
            return try check(name, choice.expected)
        case .parse:
            guard case .success = outcome else {
                Issue.record("\(name) should parse: \(outcome)")
                return false
            }
            return true
        case .parseThen416:
            guard case .success(let message) = outcome, let request = message.request else {
                Issue.record("\(name) should parse as a request: \(outcome)")
                return false
            }
            do {
                try request.checkURIScheme()
                Issue.record("\(name): \(request.uri.scheme) should be unsupported")
                return false
            } catch {
                #expect(error.suggestedResponse == .unsupportedURIScheme, "\(name)")
                #expect(error.errorResponse()?.statusCode == 416, "\(name)")
                return error.suggestedResponse == .unsupportedURIScheme
            }
        case .reject(let response):
            guard case .failure(let error) = outcome else {
                Issue.record("\(name) should be refused with \(response)")
                return false
            }
            #expect(error.suggestedResponse == response, "\(name): \(error)")
            #expect(!error.reason.isEmpty && error.reason.utf8.allSatisfy { $0 >= 0x20 && $0 < 0x7F }, "\(name)")
            return error.suggestedResponse == response
        }
    }

    @Test("refusals name the problem", arguments: [
        ("insuf", "Missing header(s): From, To, Call-ID"),
        ("multi01", "Multiple From headers"),
        ("mcl01", "Multiple Content-Length headers"),
        ("ncl", "Invalid Content-Length"),
        ("clerr", "Content-Length larger than body"),
        ("mismatch01", "CSeq method does not match request method"),
        ("mismatch02", "CSeq method does not match request method"),
        ("badvers", "SIP Version Not Supported"),
        ("ltgtruri", "Request-URI enclosed in angle brackets"),
        ("lwsruri", "Malformed Request-Line"),
        ("escruri", "Request-URI with URI headers"),
        ("scalar02", "Malformed CSeq header"),
        ("bigcode", "Invalid status code"),
        ("baddn", "Header section not terminated"),
        ("quotbal", "Malformed To header"),
        ("badaspec", "Malformed To header"),
        ("regbadct", "Malformed Contact header"),
        ("badinv01", "Malformed Via header"),
    ])
    func reasons(name: String, reason: String) throws {
        let error = try #require(parseError(TortureCorpus.bytes(name)))
        #expect(error.reason == reason)
    }

    @Test("error responses copy what a response needs")
    func errorResponses() throws {
        let insuf = try #require(parseError(TortureCorpus.bytes("insuf")))
        let response = try #require(insuf.errorResponse(toTag: "x1"))
        #expect(response.statusCode == 400)
        #expect(response.reasonPhrase == "Missing header(s): From, To, Call-ID")
        #expect(response.headers.vias.first?.branch == "z9hG4bKkdj.insuf")
        #expect(response.headers.cseq == SIPCSeq(number: 193942, method: .invite))
        let badvers = try #require(parseError(TortureCorpus.bytes("badvers")))
        let versionResponse = try #require(badvers.errorResponse(toTag: "v9"))
        #expect(versionResponse.statusCode == 505)
        #expect(versionResponse.headers.to?.tag == "v9")
        #expect(versionResponse.headers.callID == "badvers.31417@c.example.com")
        // Responses are dropped, never answered.
        let bigcode = try #require(parseError(TortureCorpus.bytes("bigcode")))
        #expect(bigcode.errorResponse() == nil)
    }
}
