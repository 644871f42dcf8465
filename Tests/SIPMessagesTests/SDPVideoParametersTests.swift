import Foundation
import SIPMessages
import Testing

/// A video format's fmtp and rtcp-fb lines (issue 47 groundwork): read within bounds, other formats' lines skipped.
@Suite("SDP: video format parameters")
struct SDPVideoParametersTests {
    @Test("VP8: max-fs and max-fr; feedback for the format and for every format (*)")
    func vp8() {
        let lines: [Substring] = [
            "a=rtpmap:96 VP8/90000", "a=fmtp:96 max-fs=3600;max-fr=30", "a=rtcp-fb:96 nack", "a=rtcp-fb:96 nack pli",
            "a=rtcp-fb:* ccm fir", "a=rtcp-fb:97 goog-remb", "a=rtcp-fb:96 transport-cc", "a=fmtp:97 max-fs=1",
        ]
        let parameters = SDPVideoParameters(payloadType: 96, attributes: lines)
        #expect(parameters.maxFrameSize == 3600 && parameters.maxFrameRate == 30)
        #expect(parameters.feedback == [.nack, .pli, .fir])
    }

    @Test("H.264: profile-level-id (lower case) and packetization-mode; REMB and TMMBR")
    func h264() {
        let lines: [Substring] = [
            "fmtp:97 profile-level-id=42E01F;packetization-mode=1;level-asymmetry-allowed=1", "rtcp-fb:97 goog-remb",
            "rtcp-fb:97 ccm tmmbr",
        ]
        let parameters = SDPVideoParameters(payloadType: 97, attributes: lines)
        #expect(parameters.profileLevelID == "42e01f" && parameters.packetizationMode == 1)
        #expect(parameters.feedback == [.remb, .tmmbr])
    }

    @Test("absurd or malformed values are as if not said: no number sizes anything out of range")
    func bounds() {
        let lines: [Substring] = [
            "a=fmtp:96 max-fs=99999999999;max-fr=0;packetization-mode=7;profile-level-id=xyz123",
            "a=fmtp:96 max-fs", "a=fmtp:96", "a=fmtp:abc max-fs=10", "a=rtcp-fb:96", "a=rtcp-fb:96 nack sli",
        ]
        let parameters = SDPVideoParameters(payloadType: 96, attributes: lines)
        #expect(parameters == SDPVideoParameters())
    }

    @Test("at most 64 lines are read")
    func bounded() {
        let lines = Array(repeating: Substring("a=rtcp-fb:96 transport-cc"), count: 64) + ["a=rtcp-fb:96 nack"]
        #expect(SDPVideoParameters(payloadType: 96, attributes: lines).feedback.isEmpty)
    }

    /// A video stream of `lines` (after its m= line) read from an offer.
    static func offered(_ media: String, _ lines: [String]) throws -> SDPVideo {
        let body = ["v=0", "o=- 1 1 IN IP4 127.0.0.1", "s=-", "c=IN IP4 127.0.0.1", "t=0 0", "m=audio 6000 RTP/AVP 0", media] + lines
        return try #require(try SDPSession.parse(Data((body.joined(separator: "\r\n") + "\r\n").utf8)).video)
    }

    @Test("answered: H.264 only in mode 1 and a baseline profile; RTX only beside the format its apt names")
    func answered() throws {
        let offer = try Self.offered("m=video 6002 RTP/AVP 100 101 102 96 103 104", [
            "a=rtpmap:100 H264/90000", "a=fmtp:100 profile-level-id=640c1f;packetization-mode=1",
            "a=rtpmap:101 H264/90000", "a=fmtp:101 profile-level-id=4d401f;packetization-mode=1",
            "a=rtpmap:102 H264/90000", "a=fmtp:102 profile-level-id=42e01f",
            "a=rtpmap:96 VP8/90000", "a=rtpmap:103 rtx/90000", "a=fmtp:103 apt=100", "a=rtpmap:104 rtx/90000", "a=fmtp:104 apt=96",
        ])
        // High (640c1f) refused, constrained baseline said by main's constraint_set1 (4d40) taken, mode 0 refused;
        // the RTX of the refused High format dropped, VP8's kept with its apt.
        let answer = offer.answer(port: 4_002)
        #expect(answer.formats.map(\.payloadType) == [101, 96, 104])
        #expect(answer.parameters[104]?.associatedPayloadType == 96)
        #expect(offer.answer(port: 4_002, accepting: ["VP8"]).formats.map(\.payloadType) == [96, 104], "VP8 alone when asked")
        #expect(!offer.answer(port: 4_002, accepting: []).isActive, "no codec accepted: refused")
    }

    @Test("our offer lists the codecs asked for, in order, then their RTX formats")
    func ours() {
        #expect(SDPVideoFormat.offered(["H264", "VP8"]).map(\.payloadType) == [97, 96, 98, 99])
        #expect(SDPVideoFormat.offered(["vp8"]).map(\.payloadType) == [96, 98])
        #expect(SDPVideoFormat.offered(["theora"]).isEmpty)
    }
}
