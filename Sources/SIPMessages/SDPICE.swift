import Foundation

/// The ICE attributes of the audio stream (RFC 8839): its credentials, options and UDP candidates, for the engine to
/// hand to its ICE agent (issue 43). Its `description`, `debugDescription` and mirror redact the password (it keys the
/// STUN connectivity checks, RFC 8445 §7.2.2), so no log or dump of an ``SDPSession`` shows it.
///
/// A stream has ICE only with both a ufrag of 4 to 256 ice-chars and a pwd of 22 to 256 (RFC 8839 §5.4), never half
/// of it. Reading is bounded: at most ``maximumCandidateLines`` `a=candidate` lines are examined and at most
/// ``maximumCandidatesPerComponent`` kept for each component (libnice takes 25), so an offer of a thousand candidates
/// costs no more than one of sixty-four; every line examined or not that is not kept counts in ``droppedCandidates``.
public struct SDPICE: Sendable, Hashable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// The username fragment (`a=ice-ufrag`): 4 to 256 ice-chars.
    public let ufrag: String
    /// The password (`a=ice-pwd`): 22 to 256 ice-chars. Secret: redacted from every description.
    public let pwd: String
    /// Whether the writer is an ICE lite agent (`a=ice-lite`, session level, RFC 8445 §2.5).
    public var isLite: Bool
    /// The `a=ice-options` tags (`trickle`, RFC 8840; `ice2`, RFC 8445), in order: each 1 to 32 ice-chars.
    public let options: [String]
    /// The usable UDP candidates, in the order written.
    public var candidates: [SDPCandidate]
    /// Whether the writer has sent all its candidates (`a=end-of-candidates`, RFC 8840 §8.2).
    public var endOfCandidates: Bool
    /// How many `a=candidate` lines reading the stream left out: malformed, not UDP, not at an IP literal, not
    /// usable (``SDPCandidate/isUsable``), a duplicate, or beyond the bounds. Zero in a value Parley writes.
    public var droppedCandidates: Int

    /// The shortest and longest ufrag (RFC 8839 §5.4).
    public static let ufragLength = 4...256
    /// The shortest and longest pwd (RFC 8839 §5.4).
    public static let pwdLength = 22...256
    /// The longest `a=ice-options` tag kept (RFC 8839 sets none; the registered ones have at most 12 characters).
    public static let maximumOptionLength = 32
    /// The most `a=ice-options` tags kept; the rest are ignored.
    public static let maximumOptions = 8
    /// The most `a=candidate` lines of a stream examined; the rest are counted as dropped, unread.
    public static let maximumCandidateLines = 64
    /// The most candidates kept for one component; the rest are counted as dropped.
    public static let maximumCandidatesPerComponent = 16

    /// ICE attributes; nil when the ufrag is not 4–256 ice-chars, the pwd not 22–256, an option not 1–32 or given
    /// twice, or there are more than ``maximumOptions`` options.
    ///
    /// A description written with it reads back the same value when its candidates are what reading keeps: usable,
    /// distinct, at most 16 for a component and 64 in all (a value read from a description always is).
    public init?(
        ufrag: String, pwd: String, isLite: Bool = false, options: [String] = [], candidates: [SDPCandidate] = [],
        endOfCandidates: Bool = false, droppedCandidates: Int = 0
    ) {
        guard ICEChars.isValid(ufrag, length: Self.ufragLength), ICEChars.isValid(pwd, length: Self.pwdLength),
            options.count <= Self.maximumOptions, Set(options).count == options.count,
            options.allSatisfy({ ICEChars.isValid($0, length: 1...Self.maximumOptionLength) })
        else { return nil }
        self.ufrag = ufrag
        self.pwd = pwd
        self.isLite = isLite
        self.options = options
        self.candidates = candidates
        self.endOfCandidates = endOfCandidates
        self.droppedCandidates = droppedCandidates
    }

    /// The ICE of a stream from what its level and the session's say (RFC 8839 §5.4: a stream's ufrag, pwd and
    /// options over the session's); nil when the ufrag or pwd is missing or out of bounds.
    init?(session: SDPICEAttributes, stream: SDPICEAttributes) {
        guard let ufrag = stream.ufrag ?? session.ufrag, let pwd = stream.pwd ?? session.pwd else { return nil }
        self.init(
            ufrag: ufrag, pwd: pwd, isLite: session.isLite, options: stream.options ?? session.options ?? [],
            candidates: stream.candidates, endOfCandidates: stream.endOfCandidates || session.endOfCandidates,
            droppedCandidates: stream.droppedCandidates)
    }

    /// The stream's media-level lines, in this order: `a=ice-ufrag`, `a=ice-pwd`, `a=ice-options` if any, each
    /// `a=candidate`, `a=end-of-candidates` if set. (`a=ice-lite` is a session-level line: ``SDPSession`` writes it.)
    var mediaLines: [String] {
        var lines = ["a=ice-ufrag:" + ufrag, "a=ice-pwd:" + pwd]
        if !options.isEmpty { lines.append("a=ice-options:" + options.joined(separator: " ")) }
        lines += candidates.map { "a=candidate:" + $0.attributeValue }
        if endOfCandidates { lines.append("a=end-of-candidates") }
        return lines
    }

    /// Everything but the pwd, which shows as its length.
    public var description: String {
        "SDPICE(ufrag \(ufrag), pwd redacted (\(pwd.utf8.count) chars)\(isLite ? ", lite" : "")"
            + (options.isEmpty ? "" : ", options \(options.joined(separator: " "))")
            + ", \(candidates.count) candidates\(endOfCandidates ? ", end" : ""), \(droppedCandidates) dropped)"
    }

    /// The same as `description`: the pwd is secret.
    public var debugDescription: String { description }

    /// The fields, with the pwd's length in place of the pwd: `dump` and reflection show nothing else.
    public var customMirror: Mirror {
        Mirror(
            self,
            children: [
                "ufrag": ufrag, "pwdLength": pwd.utf8.count, "isLite": isLite, "options": options, "candidates": candidates,
                "endOfCandidates": endOfCandidates, "droppedCandidates": droppedCandidates,
            ], displayStyle: .struct)
    }
}

/// The ICE attributes of one level of a description (the audio stream's, or the session's), read one attribute at a
/// time: bounded, so a thousand `a=candidate` lines cost no more than sixty-four.
struct SDPICEAttributes {
    /// The attribute names read (any case).
    static let fields = ["candidate", "ice-ufrag", "ice-pwd", "ice-options", "ice-lite", "end-of-candidates"]

    /// Whether candidates are read: they are media-level attributes, passed over at session level.
    let readsCandidates: Bool
    /// The first `a=ice-ufrag`'s value, trimmed (empty when it has none); nil when there is none.
    private(set) var ufrag: String?
    /// The first `a=ice-pwd`'s value, trimmed; nil when there is none.
    private(set) var pwd: String?
    /// Whether `a=ice-lite` is present.
    private(set) var isLite = false
    /// The usable tags of the first `a=ice-options`; nil when there is none.
    private(set) var options: [String]?
    /// The candidates kept.
    private(set) var candidates: [SDPCandidate] = []
    /// How many `a=candidate` lines were not kept.
    private(set) var droppedCandidates = 0
    /// Whether `a=end-of-candidates` is present.
    private(set) var endOfCandidates = false
    /// How many `a=candidate` lines were seen.
    private var candidateLines = 0

    /// Reads nothing yet; candidates only when `readsCandidates`.
    init(readsCandidates: Bool) {
        self.readsCandidates = readsCandidates
    }

    /// Reads one attribute: `field` as written, one of ``fields`` in any case; `value` (nil for a property attribute)
    /// is only made when it is used, so a candidate line beyond the bound is counted and never copied.
    mutating func read(field: String, value: () -> String?) {
        if field.caseInsensitiveEquals("candidate") {
            guard readsCandidates else { return }
            candidateLines += 1
            guard candidateLines <= SDPICE.maximumCandidateLines, let text = value(),
                let candidate = SDPCandidate(attributeValue: text), candidate.isUsable, !candidates.contains(candidate),
                candidates.lazy.filter({ $0.component == candidate.component }).count < SDPICE.maximumCandidatesPerComponent
            else {
                droppedCandidates += 1
                return
            }
            candidates.append(candidate)
        } else if field.caseInsensitiveEquals("ice-ufrag") {
            if ufrag == nil { ufrag = String(value()?.trimmingSDPSpaces ?? "") }
        } else if field.caseInsensitiveEquals("ice-pwd") {
            if pwd == nil { pwd = String(value()?.trimmingSDPSpaces ?? "") }
        } else if field.caseInsensitiveEquals("ice-options") {
            if options == nil { options = Self.options(value() ?? "") }
        } else if field.caseInsensitiveEquals("ice-lite") {
            isLite = true
        } else if field.caseInsensitiveEquals("end-of-candidates") {
            endOfCandidates = true
        }
    }

    /// The valid tags of an `a=ice-options` value, each once, at most ``SDPICE/maximumOptions`` (the line is walked
    /// in place: a long one builds nothing).
    private static func options(_ value: String) -> [String] {
        var text = value
        return text.withUTF8 { line in
            var tags: [String] = []
            var fields = SDPFieldScanner(line)
            while tags.count < SDPICE.maximumOptions, let field = fields.next() {
                guard ICEChars.isValid(line[field], length: 1...SDPICE.maximumOptionLength) else { continue }
                let tag = String(decoding: line[field], as: UTF8.self)
                if !tags.contains(tag) { tags.append(tag) }
            }
            return tags
        }
    }
}
