import Foundation
import SIPMessages

/// The answers Parley would give an offer with SDES and with DTLS, and what they must satisfy: an answer agrees with
/// its offer (SDPSession.negotiatedSecurity is not nil), and its security attributes read back from its text.
/// Shared by fuzz-sdp (whole bodies) and fuzz-sdp-security (attribute values inside an offer).
public enum SecureAnswers {
    /// Our keys for every suite (fixed: the fuzzer checks logic, not randomness).
    static let lines = SDPCrypto.fresh { suite in (0..<suite.keyLength).map { UInt8(truncatingIfNeeded: $0 &* 7) } }
    /// Our fingerprint.
    static let fingerprint = SDPFingerprint(hashFunction: .sha256, digest: Array(repeating: 0x5A, count: 32))!

    /// Answers `offer` plain, with SDES and with DTLS, and traps when an answer breaks the rules above.
    public static func check(_ offer: SDPSession) {
        let local = SDPOrigin(sessionID: 1, sessionVersion: 1, address: "192.0.2.4")
        for security in [SDPMediaSecurity.plain, .sdes(lines), .dtls(fingerprints: [fingerprint], setup: .active)] {
            guard let answer = offer.answer(
                origin: local, connectionAddress: "192.0.2.4", audioPort: 4000, supportedCodecs: [.pcmu, .pcma, .opus],
                security: security, acceptsRTCPMux: true)
            else { continue }
            precondition(answer.audioProtocol.encryption == offer.audioProtocol.encryption, "not answered in kind")
            precondition(SDPSession.negotiatedSecurity(offer: offer, answer: answer, localIsOfferer: false) != nil,
                "an answer that does not agree with its offer")
            if let reread = try? SDPSession.parse(answer.serialize()) {
                precondition(reread.crypto == answer.crypto && reread.fingerprints == answer.fingerprints
                    && reread.setup == answer.setup && reread.audioProtocol == answer.audioProtocol, "an answer does not read back")
            }
        }
    }
}
