import Foundation
import Testing

@testable import SIPMessages

/// The parse memo changes how often libosip2 runs, never what a parse gives.
@Suite("Parse memo: recently parsed URIs and addresses")
struct ParseMemoTests {
    /// A memo for counting hits exactly. The memo is direct-mapped by each text's `hashValue`, which Swift seeds at
    /// random per process, so two of a message's texts can take the same slot and one evicts the other: with the
    /// default 256 slots that happened now and then (twice on 2026-12-04, once in a clean-clone CI run) and failed
    /// these counts. With 65,536 slots the chance is a few in 100,000.
    private static func roomyMemo() -> SIPParseMemo { SIPParseMemo(slots: 65_536) }

    /// The verdict (message or error) of parsing `bytes`.
    private static func verdict(_ bytes: Data, memo: SIPParseMemo?) -> Result<SIPMessage, SIPParseError> {
        Result { () throws(SIPParseError) in try SIPMessage.parse(bytes, memo: memo) }
    }

    @Test("the torture corpus and 2,000 mutations of it: with a memo shared by all, the same verdicts as without")
    func sameVerdicts() throws {
        let seeds = try TortureCorpus.names().map { try [UInt8](TortureCorpus.bytes($0)) }
        let memo = SIPParseMemo(slots: 8)  // small: slots are taken over often
        var generator = FuzzTests.Generator(state: 0x3E30)
        var inputs = seeds.map { Data($0) } + seeds.map { Data($0) }  // each seed twice: the second from the memo
        for round in 0..<2_000 { inputs.append(Data(FuzzTests.mutate(seeds[round % seeds.count], with: &generator))) }
        for (index, input) in inputs.enumerated() {
            let plain = Self.verdict(input, memo: nil), memoised = Self.verdict(input, memo: memo)
            switch (plain, memoised) {
            case (.success(let expected), .success(let got)):
                #expect(got == expected, "input \(index)")
                #expect(TypedViews(got.headers) == TypedViews(expected.headers), "input \(index)")
            case (.failure(let expected), .failure(let got)):
                #expect(got.kind == expected.kind && got.reason == expected.reason, "input \(index)")
            case (.success, .failure), (.failure, .success):
                Issue.record("input \(index): \(plain) without the memo, \(memoised) with it")
            }
        }
        #expect(memo.hits > 100 && memo.misses > 100)
    }

    @Test("a call's ACK and BYE find its Request-URI, From and To in the memo")
    func aCallRepeatsItself() throws {
        let memo = Self.roomyMemo()
        _ = try SIPMessage.parse(sipBytes(basicInviteLines), memo: memo)
        #expect(memo.hits == 0)
        let misses = memo.misses
        var bye = basicInviteLines
        bye[0] = "BYE sip:bob@example.com SIP/2.0"
        bye[1] = "Via: SIP/2.0/UDP 192.0.2.1:5060;branch=z9hG4bKnew;rport"
        bye[6] = "CSeq: 314160 BYE"
        bye.remove(at: 7)  // no Contact
        let request = try #require(try SIPMessage.parse(sipBytes(bye), memo: memo).request)
        #expect(memo.hits == 3, "Request-URI, From and To")
        #expect(memo.misses == misses)
        #expect(request.headers.from?.tag == "1928301774" && request.uri.user == "bob")
    }

    @Test("values are matched by their bytes: a display name written precomposed is not the decomposed one")
    func bytesNotCanonicalEquivalence() throws {
        let memo = Self.roomyMemo()
        var lines = basicInviteLines
        let precomposed = "\"Ren\u{E9}\" <sip:rene@example.org>;tag=1"
        let decomposed = "\"Rene\u{301}\" <sip:rene@example.org>;tag=1"
        #expect(precomposed == decomposed)  // Swift's String equality: canonical equivalence
        lines[4] = "From: " + precomposed
        let first = try #require(try SIPMessage.parse(sipBytes(lines), memo: memo).request)
        lines[4] = "From: " + decomposed
        let second = try #require(try SIPMessage.parse(sipBytes(lines), memo: memo).request)
        #expect(Array(try #require(first.headers.from?.displayName).utf8) == Array("Ren\u{E9}".utf8))
        #expect(Array(try #require(second.headers.from?.displayName).utf8) == Array("Rene\u{301}".utf8))
    }

    @Test("a malformed value is never kept: judged afresh each time")
    func failuresAreNotKept() throws {
        let memo = Self.roomyMemo()
        var lines = basicInviteLines
        lines[4] = "From: <sip:alice@exa mple.org>;tag=1"
        for _ in 0..<2 {
            let error = try #require(parseError(sipBytes(lines), memo: memo))
            #expect(error.kind == .malformedHeader(name: "From"))
        }
        #expect(memo.hits == 1, "the Request-URI only")
    }

    @Test("a text longer than the memo keeps is parsed every time, never kept")
    func longTextsAreNotKept() throws {
        let memo = Self.roomyMemo()
        var lines = basicInviteLines
        lines[4] = "From: \"\(String(repeating: "a", count: SIPParseMemo.longestText))\" <sip:alice@example.org>;tag=1"
        for _ in 0..<2 { #expect(try SIPMessage.parse(sipBytes(lines), memo: memo).request?.headers.fromTag == "1") }
        // The Request-URI, To and Contact: missed, then found; the long From is neither (kept, it would be a 4th hit).
        #expect(memo.hits == 3 && memo.misses == 3)
    }
}
