import Testing

@testable import Media

/// The browser's audio pipeline without a browser: what an offer must hold, and what a bad one gets.
@Suite("Media: browser audio (webrtcbin)")
struct BrowserAudioTests {
    static let offer = """
        v=0\r
        o=- 1 2 IN IP4 127.0.0.1\r
        s=-\r
        t=0 0\r
        a=group:BUNDLE 0\r
        m=audio 9 UDP/TLS/RTP/SAVPF 111 0\r
        c=IN IP4 0.0.0.0\r
        a=rtpmap:111 opus/48000/2\r
        a=rtpmap:0 PCMU/8000\r
        """

    @Test("the offer's opus payload type is found (any case, any number); none without opus")
    func opusPayloadType() {
        #expect(BrowserAudio.opusPayloadType(in: Self.offer) == 111)
        #expect(BrowserAudio.opusPayloadType(in: "a=rtpmap:109 OPUS/48000/2\n") == 109)
        #expect(BrowserAudio.opusPayloadType(in: "a=rtpmap:0 PCMU/8000\r\na=rtpmap:300 opus/48000/2\r\n") == nil)
        #expect(BrowserAudio.opusPayloadType(in: "a=rtpmap:x opus/48000\n") == nil)
    }

    @Test("the pipeline's description builds (webrtcbin, opus both ways, the forwarding appsrc and appsink)")
    func descriptionBuilds() throws {
        let pipeline = try Pipeline(BrowserAudio.description(payloadType: 111))
        for name in [BrowserAudio.web, BrowserAudio.toBrowser, BrowserAudio.fromBrowser, BrowserAudio.depayloader] {
            #expect(pipeline.has(name), "\(name)")
        }
        pipeline.finish(waitingMilliseconds: 0)
    }

    @Test("an offer with no opus, no SDP at all, or too long is refused with a reason; nothing is left running")
    func badOffers() {
        for (offer, reason) in [
            ("v=0\r\nm=audio 9 RTP/AVP 0\r\na=rtpmap:0 PCMU/8000\r\n", "no opus"),
            ("hello", "no opus"),
            ("v=0\r\na=rtpmap:111 opus/48000/2\r\n" + String(repeating: "a=x\r\n", count: 20_000), "too long"),
            ("a=rtpmap:111 opus/48000/2\r\nnot sdp at all", "not SDP"),
        ] {
            do {
                _ = try BrowserAudio(offer: offer, timeout: .seconds(2))
                Issue.record("an offer that should be refused (\(reason)) was answered")
            } catch {
                #expect(!error.message.isEmpty, "\(reason)")
            }
        }
    }
}
