import Foundation

@testable import SIPMessages

/// Encrypted offers as baresip 1.0 and linphonec 5.1.65 write them (as the team's interop notes record them; baresip's
/// modules/srtp and modules/dtls_srtp), keys and fingerprints replaced by random ones.
enum SecureOffers {
    /// baresip `mediaenc=srtp-mand`: RTP/SAVP with one line, tag 1, its preferred suite.
    static let baresipSRTPMand = """
        v=0\r
        o=- 1931432345 1438914343 IN IP4 127.0.0.1\r
        s=-\r
        c=IN IP4 127.0.0.1\r
        t=0 0\r
        a=tool:baresip 1.0.0\r
        m=audio 10000 RTP/SAVP 0 8 101\r
        b=AS:87\r
        a=rtpmap:0 PCMU/8000\r
        a=rtpmap:8 PCMA/8000\r
        a=rtpmap:101 telephone-event/8000\r
        a=fmtp:101 0-15\r
        a=sendrecv\r
        a=label:1\r
        a=rtcp-rsize\r
        a=ssrc:1846572893 cname:3c2e8a5d-0f7e-4c2b-9d1a-6b8e4f1a2c3d\r
        a=crypto:1 AES_CM_128_HMAC_SHA1_80 inline:e7xOZaX/buTSV6hePpFg5goWW5a3KD+KdM9PwiFf\r
        a=ptime:20\r

        """

    /// baresip `mediaenc=srtp` (best effort): the same line in an RTP/AVP offer, which linphone answers plain.
    static let baresipSRTPBestEffort = baresipSRTPMand.replacingOccurrences(of: "RTP/SAVP", with: "RTP/AVP")

    /// baresip `mediaenc=srtp-mandf`: RTP/SAVPF.
    static let baresipSRTPMandF = baresipSRTPMand.replacingOccurrences(of: "RTP/SAVP", with: "RTP/SAVPF")

    /// linphonec `media_encryption=srtp`: RTP/SAVP with its four default suites, tags 1–4.
    static let linphoneSRTP = """
        v=0\r
        o=bob 2160 2714 IN IP4 127.0.0.1\r
        s=Talk\r
        c=IN IP4 127.0.0.1\r
        t=0 0\r
        a=rtcp-xr:rcvr-rtt=all:10000 stat-summary=loss,dup,jitt,TTL voip-metrics\r
        a=record:off\r
        m=audio 7078 RTP/SAVP 96 97 98 0 8 18 101 99 100\r
        a=rtpmap:96 opus/48000/2\r
        a=fmtp:96 useinbandfec=1\r
        a=rtpmap:97 speex/16000\r
        a=fmtp:97 vbr=on\r
        a=rtpmap:98 speex/8000\r
        a=fmtp:98 vbr=on\r
        a=fmtp:18 annexb=yes\r
        a=rtpmap:101 telephone-event/48000\r
        a=rtpmap:99 telephone-event/16000\r
        a=rtpmap:100 telephone-event/8000\r
        a=crypto:1 AES_CM_128_HMAC_SHA1_80 inline:e7xOZaX/buTSV6hePpFg5goWW5a3KD+KdM9PwiFf\r
        a=crypto:2 AES_CM_128_HMAC_SHA1_32 inline:cL0CJ592ggueptWkySZSGDXSk1C01CQtxhTY+Ch1\r
        a=crypto:3 AES_256_CM_HMAC_SHA1_80 inline:LBYreip+F5aBwGdFSBsF8TJYdFQK85G/2CBCyy+LyaXqLVFb/wHg2w0unmKYbA==\r
        a=crypto:4 AES_256_CM_HMAC_SHA1_32 inline:YqZquJUzfI9cO4ZzE51sRqR/YsqB3di5TtsQYxBFLpvVzWOWpQrOdJCF3vQIAw==\r
        a=rtcp-fb:* trr-int 1000\r
        a=rtcp-fb:* ccm tmmbr\r

        """

    /// The SHA-256 fingerprint in the DTLS offers.
    static let fingerprintHex =
        "F1:B7:3B:4D:F3:F4:29:01:BC:3B:BA:66:CA:EA:61:42:78:65:A8:C5:73:1E:3B:51:B9:19:22:2F:39:3E:95:C0"

    /// baresip `mediaenc=dtls_srtp`: UDP/TLS/RTP/SAVPF, `a=setup:actpass` and `a=fingerprint:SHA-256` at session
    /// level (upper-case hash name), rtcp-mux.
    static let baresipDTLS = """
        v=0\r
        o=- 1189498218 2823186183 IN IP4 127.0.0.1\r
        s=-\r
        c=IN IP4 127.0.0.1\r
        t=0 0\r
        a=tool:baresip 1.0.0\r
        a=setup:actpass\r
        a=fingerprint:SHA-256 \(fingerprintHex)\r
        m=audio 10000 UDP/TLS/RTP/SAVPF 0 8 101\r
        b=AS:87\r
        a=rtpmap:0 PCMU/8000\r
        a=rtpmap:8 PCMA/8000\r
        a=rtpmap:101 telephone-event/8000\r
        a=fmtp:101 0-15\r
        a=rtcp-mux\r
        a=sendrecv\r
        a=label:1\r
        a=rtcp-rsize\r
        a=ssrc:2870343651 cname:7d1c4b2a-5e3f-4a8b-9c6d-0e1f2a3b4c5d\r
        a=ptime:20\r

        """

    /// linphonec `media_encryption=dtls`: UDP/TLS/RTP/SAVP, `a=setup:actpass` and the fingerprint at media level,
    /// no rtcp-mux.
    static let linphoneDTLS = """
        v=0\r
        o=bob 3017 1451 IN IP4 127.0.0.1\r
        s=Talk\r
        c=IN IP4 127.0.0.1\r
        t=0 0\r
        a=record:off\r
        m=audio 7078 UDP/TLS/RTP/SAVP 0 8 101\r
        a=rtpmap:101 telephone-event/8000\r
        a=setup:actpass\r
        a=fingerprint:SHA-256 \(fingerprintHex)\r
        a=rtcp-fb:* trr-int 1000\r

        """

    /// Parses SDP text.
    static func parse(_ text: String) throws -> SDPSession { try SDPSession.parse(Data(text.utf8)) }

    /// An offer from lines, CRLF-joined.
    static func sdp(_ lines: [String]) throws -> SDPSession {
        try SDPSession.parse(Data((lines.joined(separator: "\r\n") + "\r\n").utf8))
    }

    /// The head of a minimal audio offer: add the `m=` line and attributes.
    static let head = ["v=0", "o=- 1 1 IN IP4 10.0.0.1", "s=-", "c=IN IP4 10.0.0.1", "t=0 0"]

    /// Our origin in answers.
    static let local = SDPOrigin(sessionID: 7, sessionVersion: 1, address: "192.0.2.4")

    /// A key of `count` bytes from 200 upwards (no byte below 200, so no single-digit or two-digit decimal of one can
    /// be found by chance in a redacted text).
    static func key(_ count: Int, from start: UInt8 = 200) -> [UInt8] { (0..<count).map { start &+ UInt8($0 % 50) } }

    /// Our SDES keys for every suite (as the engine would draw them from RAND_bytes).
    static let ourLines = SDPCrypto.fresh { key($0.keyLength) }

    /// Our SHA-256 fingerprint.
    static let ourFingerprint = SDPFingerprint(hashFunction: .sha256, digest: Array(repeating: 0xAB, count: 32))!
}
