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
}
