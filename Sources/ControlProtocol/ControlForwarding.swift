import Foundation

/// `{"always": "sip:carol@example.com", "busy": "", "noAnswer": "sip:voicemail@example.com", "noAnswerSeconds": 15}`:
/// where incoming calls are forwarded. An absent member stays as it is; an empty string turns its rule off; `{}`
/// only reads.
public struct ForwardingParams: ControlParams {
    /// Every call, before it rings.
    public var always: String?
    /// Calls refused as busy.
    public var busy: String?
    /// Calls not answered in time.
    public var noAnswer: String?
    /// How long a call rings before `noAnswer` takes it.
    public var noAnswerSeconds: Int?
    /// The account whose calls these rules are for (by name); absent: every call without rules of its account.
    public var account: String?

    /// Params.
    public init(always: String? = nil, busy: String? = nil, noAnswer: String? = nil, noAnswerSeconds: Int? = nil, account: String? = nil) {
        self.account = account
        self.always = always
        self.busy = busy
        self.noAnswer = noAnswer
        self.noAnswerSeconds = noAnswerSeconds
    }

    /// Whether nothing is set (the request only reads).
    public var isReadOnly: Bool { always == nil && busy == nil && noAnswer == nil && noAnswerSeconds == nil }

    /// The longest target taken.
    public static let maxTargetBytes = 512

    /// The members.
    public static let fields = [
        ControlField("always", "a string", optional: true, "forward every incoming call before it rings to this SIP URI (`sip:user@host`, or `user@host`); `\"\"` turns it off"),
        ControlField("busy", "a string", optional: true, "forward calls refused as busy (do-not-disturb on, every line taken) to this SIP URI; `\"\"` turns it off"),
        ControlField("noAnswer", "a string", optional: true, "forward calls not answered within `noAnswerSeconds` to this SIP URI; `\"\"` turns it off"),
        ControlField("noAnswerSeconds", "an integer", optional: true, "how long a call rings before `noAnswer` takes it: 1 to 600 (parleyd's default 20)"),
        ControlField("account", "a string", optional: true, "an account's name: the rules of calls made to that account (its own from then on; an account without rules of its own follows parleyd's); absent: parleyd's rules"),
    ]
    /// An example.
    public static let example = ForwardingParams(noAnswer: "sip:voicemail@example.com", noAnswerSeconds: 15)

    /// Targets of sensible length without line breaks, the seconds in range.
    public func validate() throws(ControlError) {
        for (name, value) in [("always", always), ("busy", busy), ("noAnswer", noAnswer)] {
            guard let value else { continue }
            guard value.utf8.count <= Self.maxTargetBytes, !value.contains(where: \.isNewline) else {
                throw ControlError(.invalidParams, "\(name) must be a SIP URI of at most 512 bytes on one line.", field: name)
            }
        }
        if let seconds = noAnswerSeconds, !(1...600).contains(seconds) {
            throw ControlError(.invalidParams, "noAnswerSeconds must be from 1 to 600.", field: "noAnswerSeconds")
        }
    }
}

/// The `forwarding` method's result: the forwarding in force (`null` for a rule that is off).
public struct ForwardingState: Codable, Sendable, Equatable {
    /// Every call's target.
    @Nullable public var always: String?
    /// Busy calls' target.
    @Nullable public var busy: String?
    /// Unanswered calls' target.
    @Nullable public var noAnswer: String?
    /// How long a call rings before `noAnswer` takes it.
    public var noAnswerSeconds: Int

    /// A state.
    public init(always: String?, busy: String?, noAnswer: String?, noAnswerSeconds: Int) {
        self.always = always
        self.busy = busy
        self.noAnswer = noAnswer
        self.noAnswerSeconds = noAnswerSeconds
    }
}

extension ForwardingState: ControlShape {
    /// Forwarding's state.
    public static let noun = ControlNoun("a forwarding state", plural: "forwarding states")
    /// The members.
    public static let fields = [
        ControlField("always", .nullable(.string), "every incoming call's target, or `null`"),
        ControlField("busy", .nullable(.string), "the target of calls refused as busy, or `null`"),
        ControlField("noAnswer", .nullable(.string), "the target of calls not answered in time, or `null`"),
        ControlField("noAnswerSeconds", .integer, "how long a call rings before `noAnswer` takes it"),
    ]
    /// Forwarding on no answer.
    public static let examples = [
        ForwardingState(always: nil, busy: nil, noAnswer: "sip:voicemail@example.com", noAnswerSeconds: 15),
        ForwardingState(always: "sip:carol@example.com", busy: "sip:voicemail@example.com", noAnswer: nil, noAnswerSeconds: 20),
    ]
}
