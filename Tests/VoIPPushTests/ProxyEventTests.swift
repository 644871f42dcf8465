import Foundation
import Testing

@testable import VoIPPush

/// Netstrings (Kamailio evapi's framing) and the push events of Examples/kamailio/kamailio.cfg.
@Suite("proxy push events: netstrings and JSON")
struct ProxyEventTests {
    static let push = #"{"event":"push","aor":"sip:alice@127.0.0.1:5390","callId":"1-297@127.0.0.1","from":"sip:bob@127.0.0.1:5382","fromName":"Bob","provider":"parley-sim","prid":"tok-alice","param":"127.0.0.1.7000"}"#

    static func netstring(_ text: String) -> [UInt8] { Array("\(text.utf8.count):\(text),".utf8) }

    /// Everything `bytes` decodes to, fed in `chunk`-byte pieces.
    static func decode(_ bytes: [UInt8], chunk: Int, limit: Int = 65_536) throws(NetstringError) -> [String] {
        var decoder = NetstringDecoder(maximumLength: limit)
        var payloads: [String] = []
        var index = 0
        while index < bytes.count {
            decoder.feed(bytes[index..<min(bytes.count, index + chunk)])
            index += chunk
            while let payload = try decoder.next() { payloads.append(String(decoding: payload, as: UTF8.self)) }
        }
        return payloads
    }

    @Test("netstrings come out whole and in order at every byte boundary, the empty one too", arguments: [1, 2, 7, 4096])
    func boundaries(chunk: Int) throws {
        let sent = [Self.push, "", "x", String(repeating: "é", count: 300)]
        let stream = sent.flatMap(Self.netstring)
        #expect(try Self.decode(stream, chunk: chunk) == sent)
    }

    @Test("a partial netstring waits for the rest")
    func partial() throws {
        var decoder = NetstringDecoder()
        decoder.feed(Array("12:hello".utf8))
        #expect(try decoder.next() == nil)
        decoder.feed(Array(" world!".utf8))
        #expect(try decoder.next() == nil, "the comma has not come yet")
        decoder.feed([UInt8(ascii: ",")])
        #expect(try decoder.next() == Data("hello world!".utf8))
        #expect(decoder.bufferedByteCount == 0)
    }

    @Test("malformed netstrings are clear errors, and the decoder stays failed", arguments: [
        ("abc:x,", NetstringError.badLength("a")),
        ("3x:abc,", NetstringError.badLength("3x")),
        (":abc,", NetstringError.badLength("")),
        ("03:abc,", NetstringError.leadingZero),
        ("3:abcd", NetstringError.missingComma(found: UInt8(ascii: "d"))),
        ("99999999999999999999:", NetstringError.tooLong(length: 999_999, limit: 65_536)),
        ("70000:", NetstringError.tooLong(length: 70_000, limit: 65_536)),
    ])
    func malformed(input: String, expected: NetstringError) {
        var decoder = NetstringDecoder()
        decoder.feed(Array(input.utf8))
        #expect(throws: expected) { try decoder.next() }
        decoder.feed(Self.netstring("fine"))
        #expect(throws: expected, "nothing after a bad netstring is trusted") { try decoder.next() }
    }

    @Test("an oversize length is refused before its payload arrives")
    func oversizeEarly() {
        var decoder = NetstringDecoder(maximumLength: 10)
        decoder.feed(Array("11".utf8))
        #expect(throws: NetstringError.tooLong(length: 11, limit: 10)) { try decoder.next() }
    }

    @Test("a push event: every field read")
    func pushEvent() throws {
        let event = try ProxyPushEvent.parse(Data(Self.push.utf8))
        #expect(event == ProxyPushEvent(
            kind: .push, addressOfRecord: "sip:alice@127.0.0.1:5390", callID: "1-297@127.0.0.1",
            caller: "sip:bob@127.0.0.1:5382", callerName: "Bob", provider: "parley-sim", token: "tok-alice",
            parameter: "127.0.0.1.7000"))
    }

    @Test("a cancel event; an empty fromName and param are absent, unknown fields ignored")
    func cancelEvent() throws {
        let text = #"{"event":"cancel","aor":"sip:a@h","callId":"c1","from":"sip:b@h","fromName":"","provider":"parley-sim","prid":"t","param":"","x":1}"#
        let event = try ProxyPushEvent.parse(Data(text.utf8))
        #expect(event.kind == .cancel)
        #expect(event.callerName == nil && event.parameter == nil)
    }

    @Test("bad events are clear errors naming the field", arguments: [
        ("{\"event\":\"push\"", ProxyPushEventError.notJSON("{\"event\":\"push\"")),
        ("[1,2]", .notAnObject),
        (#"{"event":"push","callId":"c","from":"f","provider":"p","prid":"t"}"#, .missingField("aor")),
        (#"{"event":"push","aor":"a","callId":"c","from":"f","provider":"p","prid":""}"#, .emptyField("prid")),
        (#"{"event":"push","aor":"a","callId":7,"from":"f","provider":"p","prid":"t"}"#, .notAString("callId")),
        (#"{"event":"ring","aor":"a","callId":"c","from":"f","provider":"p","prid":"t"}"#, .unknownEvent("ring")),
        (#"{"event":"push","aor":"a","callId":"c\u0007","from":"f","provider":"p","prid":"t"}"#, .controlCharacters("callId")),
        (#"{"event":"push","aor":"a","callId":"c","from":"f","provider":"p","prid":"two words"}"#,
         .badToken("contains white space or control characters")),
    ])
    func badEvents(input: String, expected: ProxyPushEventError) {
        #expect(throws: expected) { try ProxyPushEvent.parse(Data(input.utf8)) }
    }

    @Test("a field over the limit is refused")
    func overlong() {
        let long = String(repeating: "a", count: ProxyPushEvent.maximumFieldLength + 1)
        let text = #"{"event":"push","aor":"\#(long)","callId":"c","from":"f","provider":"p","prid":"t"}"#
        #expect(throws: ProxyPushEventError.tooLong("aor")) { try ProxyPushEvent.parse(Data(text.utf8)) }
    }
}
