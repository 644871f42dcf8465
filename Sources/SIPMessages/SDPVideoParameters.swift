/// What a video format's `a=fmtp` and `a=rtcp-fb` lines say: VP8's frame size and rate limits
/// (RFC 7741 §6.1), H.264's profile and packetization mode (RFC 6184 §8.1), and the RTCP feedback the peer takes
/// (RFC 4585, RFC 5104): NACK, PLI, FIR, REMB, TMMBR. Read within bounds: a value out of range is dropped (nil), as
/// if the peer had not said it, so absurd numbers never size a buffer.
public struct SDPVideoParameters: Sendable, Hashable {
    /// VP8 `max-fs`: the largest frame, in 16×16 macroblocks (1…139,264: 8K).
    public var maxFrameSize: Int?
    /// VP8 `max-fr`: the highest frame rate (1…240).
    public var maxFrameRate: Int?
    /// H.264 `profile-level-id`: six hex digits (profile_idc, constraints, level_idc), lower case.
    public var profileLevelID: String?
    /// H.264 `packetization-mode` (0, 1 or 2; absent means 0).
    public var packetizationMode: Int?
    /// RTX's `apt` (RFC 4588): the payload type a retransmission format repeats (0…127).
    public var associatedPayloadType: Int?
    /// The feedback messages the peer takes for this format (or for every format: `a=rtcp-fb:*`).
    public var feedback: Set<RTCPFeedback> = []

    /// The most `a=fmtp` and `a=rtcp-fb` lines of a stream read, and the most formats given parameters.
    public static let maximumLines = 64, maximumFormats = 8

    /// Nothing said.
    public init() {}

    /// The parameters of payload type `payloadType` from a media section's attribute lines (`a=` prefix dropped or
    /// not); lines of other payload types and unknown parameters are skipped. At most 64 lines are read.
    public init(payloadType: Int, attributes: [Substring]) {
        for raw in attributes.prefix(Self.maximumLines) {
            let line = raw.hasPrefix("a=") ? raw.dropFirst(2) : raw[...]
            if line.hasPrefix("fmtp:"), let rest = Self.forFormat(line.dropFirst(5), payloadType, wildcard: false) {
                readFormatParameters(rest)
            } else if line.hasPrefix("rtcp-fb:"), let rest = Self.forFormat(line.dropFirst(8), payloadType, wildcard: true),
                let kind = RTCPFeedback(rest)
            {
                feedback.insert(kind)
            }
        }
    }

    /// Its lines for `payloadType`: an `a=fmtp` when it says anything of the format, an `a=rtcp-fb` per feedback kind.
    public func lines(payloadType: Int) -> [String] {
        let values: [String?] = [
            profileLevelID.map { "profile-level-id=\($0)" }, packetizationMode.map { "packetization-mode=\($0)" },
            maxFrameSize.map { "max-fs=\($0)" }, maxFrameRate.map { "max-fr=\($0)" }, associatedPayloadType.map { "apt=\($0)" },
        ]
        let format = values.compactMap { $0 }
        return (format.isEmpty ? [] : ["a=fmtp:\(payloadType) " + format.joined(separator: ";")])
            + RTCPFeedback.allCases.filter(feedback.contains).map { "a=rtcp-fb:\(payloadType) \($0.rawValue)" }
    }

    /// What follows the payload type when the line is for `payloadType` (or `*` where allowed), else nil.
    private static func forFormat(_ text: Substring, _ payloadType: Int, wildcard: Bool) -> Substring? {
        let parts = text.split(separator: " ", maxSplits: 1, omittingEmptySubsequences: true)
        guard parts.count == 2 else { return nil }
        guard (wildcard && parts[0] == "*") || Int(parts[0]) == payloadType else { return nil }
        return parts[1]
    }

    private mutating func readFormatParameters(_ text: Substring) {
        for pair in text.split(separator: ";") {
            let parts = pair.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
            guard parts.count == 2 else { continue }
            let number = Int(parts[1])
            switch parts[0] {
            case "max-fs": maxFrameSize = number.flatMap { (1...139_264).contains($0) ? $0 : nil }
            case "max-fr": maxFrameRate = number.flatMap { (1...240).contains($0) ? $0 : nil }
            case "packetization-mode": packetizationMode = number.flatMap { (0...2).contains($0) ? $0 : nil }
            case "apt": associatedPayloadType = number.flatMap { (0...127).contains($0) ? $0 : nil }
            case "profile-level-id":
                let hex = parts[1]
                profileLevelID = hex.count == 6 && hex.allSatisfy(\.isHexDigit) ? hex : nil
            default: break
            }
        }
    }
}

/// An RTCP feedback message a receiver takes (`a=rtcp-fb`).
public enum RTCPFeedback: String, Sendable, Hashable, CaseIterable {
    /// Generic NACK (RFC 4585): retransmission of lost packets.
    case nack = "nack"
    /// Picture Loss Indication (RFC 4585): a keyframe, please.
    case pli = "nack pli"
    /// Full Intra Request (RFC 5104): a keyframe, please.
    case fir = "ccm fir"
    /// Temporary Maximum Media Bitrate Request (RFC 5104).
    case tmmbr = "ccm tmmbr"
    /// Receiver Estimated Maximum Bitrate (draft-alvestrand-rmcat-remb).
    case remb = "goog-remb"

    /// The kind an `a=rtcp-fb` value names (after the payload type), nil for others (`trr-int`, `transport-cc`…).
    public init?(_ value: Substring) {
        let words = value.lowercased().split(separator: " ").prefix(2).joined(separator: " ")
        guard let kind = RTCPFeedback(rawValue: words) ?? RTCPFeedback(rawValue: String(words.split(separator: " ").first ?? "")),
            words.split(separator: " ").count == 1 || kind != .nack
        else { return nil }
        self = kind
    }
}
