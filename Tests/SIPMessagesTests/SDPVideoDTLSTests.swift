import Foundation
import SIPMessages
import Testing

/// A DTLS-SRTP video stream (RFC 5763/5764): its own fingerprints and role, read from its m-section (else the
/// session's), written there, and answered in kind only with ours and a role the offer allows.
@Suite("SDP: DTLS-SRTP video")
struct SDPVideoDTLSTests {
    static let ours = SDPFingerprint(hashFunction: .sha256, digest: Array(repeating: 0xAB, count: 32))!
    static let theirs = SDPFingerprint(hashFunction: .sha256, digest: Array(0..<32))!

    /// A DTLS offer of audio and video: the fingerprint at session level, the video's role at its own.
    static func offer(videoSetup: String? = "actpass", sessionFingerprint: Bool = true) -> [String] {
        ["v=0", "o=peer 1 1 IN IP4 127.0.0.1", "s=-", "c=IN IP4 127.0.0.1", "t=0 0"]
            + (sessionFingerprint ? ["a=fingerprint:\(theirs.attributeValue)"] : [])
            + ["m=audio 6000 UDP/TLS/RTP/SAVP 0", "a=setup:actpass", "m=video 6002 UDP/TLS/RTP/SAVPF 96", "a=rtpmap:96 VP8/90000"]
            + (videoSetup.map { ["a=setup:\($0)"] } ?? []) + ["a=sendrecv"]
    }

    @Test("read with the session's fingerprint; answered UDP/TLS/RTP/SAVPF with our fingerprint and passive, written in its m-section and read back")
    func answered() throws {
        let offer = try SDPTests.sdp(Self.offer())
        let video = try #require(offer.video)
        #expect(video.fingerprints == [Self.theirs] && video.setup == .actpass && video.transportProtocol.encryption == .dtls)
        let answer = video.answer(port: 4002, dtls: ([Self.ours], .passive))
        #expect(answer.isActive && answer.transport == "UDP/TLS/RTP/SAVPF" && answer.fingerprints == [Self.ours] && answer.setup == .passive)
        let session = try #require(offer.answer(
            origin: SDPTests.local, connectionAddress: "192.0.2.4", audioPort: 4000, videoPort: 4002,
            security: .dtls(fingerprints: [Self.ours], setup: .passive), videoDTLS: ([Self.ours], .passive)))
        let text = String(decoding: session.serialize(), as: UTF8.self)
        #expect(text.contains("m=video 4002 UDP/TLS/RTP/SAVPF 96\r\n") && text.contains("a=setup:passive\r\na=fingerprint:sha-256 AB:AB"), "\(text)")
        let reread = try SDPSession.parse(session.serialize())
        #expect(reread.video?.fingerprints == [Self.ours] && reread.video?.setup == .passive)
        // The offer's role decides where it does not leave the choice to us.
        #expect(try SDPTests.sdp(Self.offer(videoSetup: "passive")).video?.answer(port: 4002, dtls: ([Self.ours], .passive)).setup == .active)
        #expect(try SDPTests.sdp(Self.offer(videoSetup: nil)).video?.answer(port: 4002, dtls: ([Self.ours], .passive)).setup == .passive,
            "no a=setup reads active")
    }

    @Test("refused (port 0): without DTLS of ours, without the peer's fingerprint, with holdconn")
    func refused() throws {
        let video = try #require(try SDPTests.sdp(Self.offer()).video)
        #expect(!video.answer(port: 4002).isActive)
        #expect(!video.answer(port: 4002, dtls: ([], .passive)).isActive)
        #expect(try SDPTests.sdp(Self.offer(sessionFingerprint: false)).video?.answer(port: 4002, dtls: ([Self.ours], .passive)).isActive == false)
        #expect(try SDPTests.sdp(Self.offer(videoSetup: "holdconn")).video?.answer(port: 4002, dtls: ([Self.ours], .passive)).isActive == false)
    }

    @Test("an offer of ours: secured with our fingerprint and actpass, and back to plain or SDES without them")
    func offered() {
        let plain = SDPVideo(port: 4002)
        let dtls = plain.secured(fingerprints: [Self.ours], setup: .actpass)
        #expect(dtls.transport == "UDP/TLS/RTP/SAVP" && dtls.setup == .actpass && dtls.fingerprints == [Self.ours])
        let back = dtls.secured(nil)
        #expect(back.transport == "RTP/AVP" && back.fingerprints.isEmpty && back.setup == nil)
    }
}
