import Foundation
import Testing

@testable import ControlChannel

@Suite struct LineDecoderTests {
    @Test func splitsLinesStripsCRAndSkipsEmptyOnes() {
        var decoder = LineDecoder(maximumLength: 8)
        decoder.feed(Array("ab\r\n\n\r\ncd".utf8))
        #expect(decoder.next() == .line(Data("ab".utf8)))
        #expect(decoder.next() == nil)
        decoder.feed(Array("e\n".utf8))
        #expect(decoder.next() == .line(Data("cde".utf8)))
        #expect(decoder.next() == nil)
        #expect(decoder.bufferedByteCount == 0)
    }

    @Test func theLimitIsOnTheContentAndHoldsBeforeTheLF() {
        var decoder = LineDecoder(maximumLength: 4)
        decoder.feed(Array("abcd\r\n".utf8))
        #expect(decoder.next() == .line(Data("abcd".utf8)))
        decoder.feed(Array("abcde".utf8))
        #expect(decoder.next() == nil)  // five bytes so far: the fifth may be the CR before an LF
        decoder.feed(Array("f".utf8))
        #expect(decoder.next() == .tooLarge)

        var complete = LineDecoder(maximumLength: 4)
        complete.feed(Array("abcde\n".utf8))
        #expect(complete.next() == .tooLarge)
    }

    @Test func tokensAreComparedWhole() {
        let expected = Array("0123456789abcdef".utf8)
        #expect(ControlWire.tokensMatch("0123456789abcdef", expected))
        #expect(!ControlWire.tokensMatch("0123456789abcdee", expected))
        #expect(!ControlWire.tokensMatch("0123456789abcde", expected))
        #expect(!ControlWire.tokensMatch("0123456789abcdef0", expected))
        #expect(!ControlWire.tokensMatch("", expected))
    }

    @Test func errorLinesAreJSON() throws {
        let data = ControlWire.error(.frameTooLarge, "a \"quoted\"\nmessage")
        #expect(!data.contains(0x0A))
        let object = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        #expect(object["type"] as? String == "error")
        let error = try #require(object["error"] as? [String: Any])
        #expect(error["code"] as? String == "frameTooLarge")
        #expect(error["message"] as? String == "a \"quoted\"\nmessage")
        #expect(ControlWire.reply(ControlWire.welcome) == .welcome)
    }
}
