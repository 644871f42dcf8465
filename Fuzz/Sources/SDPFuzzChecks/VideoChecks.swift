import Foundation
import SIPMessages

/// What must hold of any video stream Parley reads (issue 47's fmtp and rtcp-fb parsers): its parameters within
/// bounds, and its answer made only of offered formats Parley carries (an RTX format only beside the format it
/// repeats), reading back the same from what Parley writes.
public enum VideoChecks {
    /// Checks an offer's video stream and its answer.
    public static func check(_ offer: SDPSession) {
        guard let video = offer.video else { return }
        for parameters in video.parameters.values { check(parameters) }
        // With keys and a fingerprint of ours (fixed bytes: the fuzzer needs no randomness), so SRTP video offers
        // are answered too, SDES and DTLS.
        let fingerprint = SDPFingerprint(hashFunction: .sha256, digest: Array(repeating: 7, count: 32))!
        let answer = video.answer(
            port: 4_002, keys: SDPCrypto.fresh { Array(repeating: 7, count: $0.keyLength) }, dtls: ([fingerprint], .passive))
        if answer.isActive, answer.transportProtocol.encryption == .dtls {
            precondition(answer.fingerprints == [fingerprint] && answer.setup?.isClient != nil, "a DTLS video answer without our role")
        }
        let offered = Set(video.formats.map(\.payloadType))
        precondition(answer.formats.allSatisfy { offered.contains($0.payloadType) }, "an answer lists a format not offered")
        if answer.isActive {
            let carried = Set(answer.formats.filter { !$0.isRetransmission }.map(\.payloadType))
            precondition(!carried.isEmpty, "an answer with only retransmission formats")
            for format in answer.formats where format.isRetransmission {
                precondition(answer.parameters[format.payloadType]?.associatedPayloadType.map(carried.contains) == true, "RTX alone")
            }
        }
        var session = offer
        session.video = answer
        // A stream without a direction of its own is written with the session's.
        var expected = answer
        expected.direction = answer.direction ?? offer.direction
        if let reread = try? SDPSession.parse(session.serialize()) {
            precondition(reread.video == expected, "a video answer does not read back")
        }
    }

    /// Checks one format's parameters, and that what Parley writes of them reads back the same.
    public static func check(_ parameters: SDPVideoParameters) {
        precondition(parameters.maxFrameSize.map { (1...139_264).contains($0) } ?? true, "max-fs out of bounds")
        precondition(parameters.maxFrameRate.map { (1...240).contains($0) } ?? true, "max-fr out of bounds")
        precondition(parameters.packetizationMode.map { (0...2).contains($0) } ?? true, "packetization-mode out of bounds")
        precondition(parameters.associatedPayloadType.map { (0...127).contains($0) } ?? true, "apt out of bounds")
        precondition(parameters.profileLevelID.map { $0.count == 6 && $0.allSatisfy(\.isHexDigit) } ?? true, "profile-level-id")
        let written = parameters.lines(payloadType: 96).map { Substring($0) }
        precondition(SDPVideoParameters(payloadType: 96, attributes: written) == parameters, "video parameters do not read back")
    }
}
