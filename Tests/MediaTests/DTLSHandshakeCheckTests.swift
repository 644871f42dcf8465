import Foundation
@testable import Media
import Testing

/// The check of a DTLS-SRTP pipeline's handshakes alone (a pure value): what is told, once, and when.
@Suite("Media: the DTLS handshake check", .timeLimit(.minutes(3)))
struct DTLSHandshakeCheckTests {
    @Test("RTP's certificate matching secures the call once; RTCP's matching later adds nothing; then nothing is awaited")
    func secured() {
        var check = DTLSHandshakeCheck(startingAt: .zero)
        #expect(check.isWaiting && check.awaits(.rtp) && check.awaits(.rtcp))
        #expect(check.certificate(on: .rtcp, matches: true) == nil, "RTCP alone secures nothing")
        #expect(check.verdict == .pending && !check.awaits(.rtcp))
        #expect(check.certificate(on: .rtp, matches: true) == .secured)
        #expect(check.verdict == .secured && !check.isWaiting)
        #expect(check.certificate(on: .rtp, matches: false) == nil, "a component is checked once")
        #expect(check.time(.seconds(60)) == nil, "no deadline once secured")
    }

    @Test("a certificate that does not match fails the check, RTP's or RTCP's, even after it was secured")
    func mismatch() {
        var rtp = DTLSHandshakeCheck(startingAt: .zero)
        guard case .failed(let why)? = rtp.certificate(on: .rtp, matches: false) else { Issue.record("not failed"); return }
        #expect(why.contains("RTP") && !rtp.isWaiting)
        #expect(rtp.certificate(on: .rtcp, matches: true) == nil && rtp.time(.seconds(11)) == nil, "told once")
        var rtcp = DTLSHandshakeCheck(startingAt: .zero)
        #expect(rtcp.certificate(on: .rtp, matches: true) == .secured)
        #expect(rtcp.isWaiting && rtcp.awaits(.rtcp))
        guard case .failed(let later)? = rtcp.certificate(on: .rtcp, matches: false) else { Issue.record("not failed"); return }
        #expect(later.contains("RTCP") && rtcp.verdict == .failed(later))
    }

    @Test("no RTP certificate within 10 s of the start fails the check; without a start (no peer address) it never does")
    func deadline() {
        var check = DTLSHandshakeCheck(startingAt: .seconds(3))
        #expect(check.time(.milliseconds(12_999)) == nil)
        guard case .failed(let why)? = check.time(.seconds(13)) else { Issue.record("not failed"); return }
        #expect(why.contains("10 s"))
        #expect(check.time(.seconds(20)) == nil, "told once")
        var unstarted = DTLSHandshakeCheck(startingAt: nil)
        #expect(unstarted.time(.seconds(3_600)) == nil && unstarted.isWaiting)
    }
}
