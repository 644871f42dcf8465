import Foundation
import Testing

@testable import SIPMessages

@Suite("Hostile and broken input")
struct RobustnessTests {
    @Test("input over 64 KiB is refused unread; 64 KiB exactly is read")
    func sizeCap() throws {
        var lines = basicInviteLines
        lines.removeLast()
        let header = sipBytes(lines + ["Content-Type: text/plain", "Content-Length: 0"])
        let bodySize = SIPMessage.maximumSize - header.count
        var exact = basicInviteLines
        exact.removeLast()
        exact += ["Content-Type: text/plain", "Content-Length: \(bodySize - String(bodySize).count + 1)"]
        let fits = sipBytes(exact, body: String(repeating: "a", count: bodySize - String(bodySize).count + 1))
        #expect(fits.count == SIPMessage.maximumSize)
        #expect(try SIPMessage.parse(fits).body.count == bodySize - String(bodySize).count + 1)

        let tooBig = fits + Data("a".utf8)
        let error = try #require(parseError(tooBig))
        #expect(error.kind == .oversized(size: SIPMessage.maximumSize + 1))
        #expect(error.suggestedResponse == .drop)
    }

    @Test("a raw NUL is refused outside a quoted-pair, accepted inside one and in the body")
    func nulBytes() throws {
        var lines = basicInviteLines
        lines[4] = "From: \"Al\0ice\" <sip:alice@example.org>;tag=1"
        let unescaped = try #require(parseError(sipBytes(lines)))
        #expect(unescaped.kind == .nulByte)
        #expect(unescaped.suggestedResponse == .badRequest)
        #expect(unescaped.reason == "NUL byte in header section")

        lines[4] = "From: \"Al\\\0ice\" <sip:alice@example.org>;tag=1"
        #expect(try SIPMessage.parse(sipBytes(lines)).headers.from?.displayName == "Al\0ice")

        lines = basicInviteLines
        lines[0] = "INVITE sip:bob@exam\0ple.com SIP/2.0"
        #expect(parseError(sipBytes(lines))?.kind == .nulByte)

        lines = basicInviteLines
        lines[lines.count - 1] = "Content-Length: 3"
        #expect(try SIPMessage.parse(sipBytes(lines, body: "a\0b")).body == Data([0x61, 0, 0x62]))

        lines = basicInviteLines
        lines.insert("X-Bell: ring\u{07}", at: 2)
        #expect(parseError(sipBytes(lines))?.kind == .malformedHeader(name: "X-Bell"))
    }

    @Test("framing: keep-alives, bare line feeds, no empty line, folding before any header")
    func framing() throws {
        #expect(parseError(Data())?.kind == .emptyMessage)
        #expect(parseError(Data("\r\n\r\n".utf8))?.suggestedResponse == .drop)
        #expect(try SIPMessage.parse(Data("\r\n\r\n".utf8) + sipBytes(basicInviteLines)).request?.method == .invite)
        let bareLF = Data((basicInviteLines.joined(separator: "\n") + "\n\n").utf8)
        #expect(parseError(bareLF)?.kind == .unterminatedHeaderSection)
        var lines = basicInviteLines
        lines[2] = "Max-Forwards: 70\nX: y"
        #expect(parseError(sipBytes(lines))?.kind == .bareLineBreak)
        lines = basicInviteLines
        lines.insert(" continued", at: 1)
        #expect(parseError(sipBytes(lines))?.kind == .malformedHeaderLine)
        lines = basicInviteLines
        lines.insert("Bad Name: x", at: 1)
        #expect(parseError(sipBytes(lines))?.reason == "Malformed header name")
    }

    @Test("start lines", arguments: [
        ("INVITE sip:bob@example.com SIP/2.1", SIPParseError.Kind.unsupportedVersion, SIPSuggestedResponse.versionNotSupported),
        ("INVITE sip:bob@example.com sip/2.0", nil, nil),
        ("INVITE sip:bob@example.com SIP/2.0x", .malformedStartLine, .badRequest),
        ("INVITE sip:bob@example.com", .malformedStartLine, .badRequest),
        ("INV(ITE sip:bob@example.com SIP/2.0", .malformedStartLine, .badRequest),
        ("INVITE sip:bob@exa mple.com SIP/2.0", .malformedStartLine, .badRequest),
        ("INVITE sip: SIP/2.0", .invalidRequestURI, .badRequest),
        ("INVITE sip:bob@example.com:70000 SIP/2.0", .invalidRequestURI, .badRequest),
        ("INVITE sip:bob@exa_mple.com;lr SIP/2.0", nil, nil),
        ("SIP/2.0 099 Early", .invalidStatusCode, .drop),
        ("SIP/2.0 700 Late", .invalidStatusCode, .drop),
        ("SIP/2.0 20 Short", .invalidStatusCode, .drop),
        ("SIP/2.0 2000 Long", .invalidStatusCode, .drop),
        ("SIP/3.0 200 OK", .unsupportedVersion, .drop),
        ("SIP/2.0 200", nil, nil),
        ("SIP/2.0 200 ", nil, nil),
        ("SIP/2.0 200 OK  with  spaces ", nil, nil),
    ])
    func startLines(line: String, kind: SIPParseError.Kind?, response: SIPSuggestedResponse?) throws {
        var lines = basicInviteLines
        lines[0] = line
        let bytes = sipBytes(lines)
        guard let kind else {
            let message = try SIPMessage.parse(bytes)
            if let reason = message.response?.reasonPhrase {
                #expect(line.hasSuffix(reason))
            }
            return
        }
        let error = try #require(parseError(bytes))
        #expect(error.kind == kind)
        #expect(error.suggestedResponse == response)
    }

    @Test("header rules", arguments: [
        ("Max-Forwards", "256", SIPParseError.Kind.invalidMaxForwards),
        ("Max-Forwards", "-1", .invalidMaxForwards),
        ("CSeq", "2147483648 INVITE", .invalidCSeq),
        ("CSeq", "1 BYE", .cseqMethodMismatch),
        ("CSeq", "1 invite", .cseqMethodMismatch),
        ("Call-ID", "a b", .malformedHeader(name: "Call-ID")),
        ("Call-ID", "a@b@c", .malformedHeader(name: "Call-ID")),
        ("To", "", .malformedHeader(name: "To")),
        ("Via", "SIP/2.0/UDP 192.0.2.1;branch=z9hG4bK1, ", .malformedHeader(name: "Via")),
        ("Content-Length", "1 2", .invalidContentLength),
        ("Content-Length", "99999999999999999999", .invalidContentLength),
        ("Content-Length", "10", .contentLengthExceedsBody(declared: 10, received: 0)),
    ])
    func headerRules(name: String, value: String, kind: SIPParseError.Kind) throws {
        var headers = try #require(try SIPMessage.parse(sipBytes(basicInviteLines)).request?.headers)
        headers.set(name, value)
        let lines = [basicInviteLines[0]] + headers.map { "\($0.name): \($0.value)" }
        let error = try #require(parseError(sipBytes(lines)))
        #expect(error.kind == kind)
    }

    @Test("single headers may not repeat, whichever form they are written in")
    func duplicates() throws {
        for (first, second) in [("Call-ID", "i"), ("To", "t"), ("From", "f"), ("CSeq", "cseq"), ("Content-Type", "c")] {
            var lines = basicInviteLines
            lines.insert("\(first): x@y", at: 1)
            lines.insert("\(second): x@y", at: 1)
            let error = try #require(parseError(sipBytes(lines)))
            #expect(error.kind == .duplicateHeader(name: SIPHeaders.canonicalName(first)), "\(first)")
        }
        var lines = basicInviteLines
        lines.removeAll { $0.hasPrefix("Via") || $0.hasPrefix("CSeq") }
        #expect(parseError(sipBytes(lines))?.kind == .missingHeaders(["Via", "CSeq"]))
    }

    @Test("a message libosip2 refuses names the header it refused")
    func gateNamesTheHeader() throws {
        var lines = basicInviteLines
        lines.insert("Record-Route: <sip:a@b", at: 1)
        #expect(parseError(sipBytes(lines))?.reason == "Malformed Record-Route header")
        lines = basicInviteLines
        lines.insert("route: <sip:a@b", at: 1)
        #expect(parseError(sipBytes(lines))?.kind == .malformedHeader(name: "Route"))
    }
}

/// Every typed view of some headers, to compare the values kept from parsing with a fresh parse of the text.
struct TypedViews: Equatable {
    let vias: [SIPVia]
    let from, to: SIPAddress?
    let fromTag, toTag: String?
    let callID: String?
    let cseq: SIPCSeq?
    let maxForwards, contentLength: Int?
    let contentType: SIPContentType?
    let contacts, routes, recordRoutes: [SIPAddress]

    init(_ headers: SIPHeaders) {
        vias = headers.vias
        from = headers.from
        to = headers.to
        // The tags read in place are the tags of the addresses.
        fromTag = headers.fromTag
        toTag = headers.toTag
        #expect(fromTag == from?.tag && toTag == to?.tag)
        callID = headers.callID
        cseq = headers.cseq
        maxForwards = headers.maxForwards
        contentLength = headers.contentLength
        contentType = headers.contentType
        contacts = headers.contacts
        routes = headers.routes
        recordRoutes = headers.recordRoutes
    }
}

@Suite("Fuzzing")
struct FuzzTests {
    /// xorshift64*: a fixed sequence, so a failure replays.
    struct Generator: RandomNumberGenerator {
        var state: UInt64
        mutating func next() -> UInt64 {
            state ^= state >> 12
            state ^= state << 25
            state ^= state >> 27
            return state &* 2_685_821_657_736_338_717
        }
    }

    static let interesting: [UInt8] = Array("\0\r\n \t\"\\<>;,:@?=%&[]/".utf8) + [0x7F, 0xFF, 0xC3]

    static func mutate(_ input: [UInt8], with generator: inout Generator) -> [UInt8] {
        var bytes = input
        for _ in 0..<Int.random(in: 1...4, using: &generator) {
            guard !bytes.isEmpty else { break }
            let at = Int.random(in: 0..<bytes.count, using: &generator)
            switch Int.random(in: 0..<7, using: &generator) {
            case 0: bytes[at] = UInt8.random(in: 0...255, using: &generator)
            case 1: bytes.insert(interesting.randomElement(using: &generator)!, at: at)
            case 2: bytes.removeSubrange(at..<min(bytes.count, at + Int.random(in: 1...16, using: &generator)))
            case 3: bytes.removeSubrange(at...)
            case 4:
                let end = min(bytes.count, at + Int.random(in: 1...80, using: &generator))
                bytes.insert(contentsOf: bytes[at..<end], at: Int.random(in: 0...bytes.count, using: &generator))
            case 5: bytes[at] = interesting.randomElement(using: &generator)!
            default:
                let digits = Array(String(Int.random(in: -99_999...Int(Int32.max) * 4, using: &generator)).utf8)
                bytes.insert(contentsOf: digits, at: at)
            }
        }
        return bytes
    }

    @Test("2,000 mutated torture messages: a value or an error, never a crash; accepted ones round-trip")
    func mutatedMessages() throws {
        let seeds = try TortureCorpus.names().map { try [UInt8](TortureCorpus.bytes($0)) }
        var generator = Generator(state: 0x5EED_4475)
        var accepted = 0
        for round in 0..<2_000 {
            let input = Self.mutate(seeds[round % seeds.count], with: &generator)
            do {
                let message = try SIPMessage.parse(Data(input))
                accepted += 1
                #expect(try SIPMessage.parse(message.serialize()) == message, "round \(round)")
                #expect(message.headers.topVia != nil && message.headers.from != nil && message.headers.to != nil)
                #expect(message.headers.callID != nil && message.headers.cseq != nil)
                #expect(TypedViews(message.headers) == TypedViews(message.headers.droppingParsedValues()), "round \(round)")
                _ = try? SDPSession.parse(message.body)
            } catch {
                #expect(!error.reason.isEmpty)
                if let response = error.errorResponse(toTag: "t") {
                    #expect(response.statusCode == error.suggestedResponse.statusCode)
                    _ = response.serialize()
                }
            }
        }
        #expect(accepted > 100)
    }

    @Test("random bytes and mutated SDP bodies never crash")
    func randomBytes() {
        var generator = Generator(state: 42)
        for _ in 0..<500 {
            let count = Int.random(in: 0...600, using: &generator)
            let bytes = (0..<count).map { _ in UInt8.random(in: 0...255, using: &generator) }
            _ = try? SIPMessage.parse(Data(bytes))
            _ = try? SDPSession.parse(Data(bytes))
        }
        let sdp = Array(SDPTests.linphoneResume.utf8)
        for _ in 0..<500 {
            _ = try? SDPSession.parse(Data(Self.mutate(sdp, with: &generator)))
        }
    }
}
