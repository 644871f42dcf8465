import Foundation

extension ControlError: ControlShape {
    /// `an error`.
    public static let noun = ControlNoun("an error", plural: "errors")

    /// The members.
    public static let fields = [
        ControlField("code", .oneOf(Code.allCases.map(\.rawValue)), "what a program switches on (see Errors)"),
        ControlField("message", .string, "a short sentence for people: show it as it is (a toast)"),
        ControlField("details", .nullable(.object(Details.self)), "what applies of the details; null when none does"),
    ]

    /// A busy callee, and a bare refusal.
    public static let examples = [
        ControlError(.failed, "The line is busy.", details: Details.examples[0]),
        ControlError(.refused, "Can't hold this call: it is still ringing."),
    ]
}

extension ControlError.Details: ControlShape {
    /// `error details`.
    public static let noun = ControlNoun("error details", plural: "error details")
    /// Only the members that apply are present.
    public static let omitsAbsentMembers = true
    /// Says so.
    public static var note: String? {
        "What applies of these is present, the rest absent (not `null`); every key any error uses is here, spelt once."
    }

    /// The members.
    public static let fields = [
        ControlField("field", .string, "the parameter at fault (`invalidParams`, `notFound`)"),
        ControlField("sipStatus", .integer, "the final SIP status the peer answered with (486, 603, 415…: `failed`)"),
        ControlField("sipReason", .string, "that status's reason phrase, as the peer wrote it"),
        ControlField("retryAfterMs", .integer, "when trying again may work, in milliseconds (a peer's Retry-After, `throttled`)"),
        ControlField("action", .oneOf(ControlWords.actions), "the action that was refused or failed"),
        ControlField("methods", .array(.string), "every method there is (`unknownMethod`)"),
        ControlField("matches", .array(.string), "the conversations an ambiguous prefix names (`notFound`)"),
        ControlField("technical", .string, "the log's own words, for a bug report; not for people"),
        ControlField("size", .integer, "a group message's size in bytes (`messageTooLarge`)"),
        ControlField("limit", .integer, "the limit that was reached: a group message's bytes, a count of collaborations"),
        ControlField("participant", .string, "the group participant at fault (`unknownParticipant`, `participantLeft`)"),
        ControlField("reason", .string, "why a proof was refused (`proofRejected`)"),
    ]

    /// Every member once.
    public static let examples = [
        ControlError.Details(
            field: "to", sipStatus: 486, sipReason: "Busy Here", retryAfterMs: 5000, action: "start", methods: ["status"],
            matches: ["8C1F0E4B-2A53-4C2B-9E0A-6D1F3B7A9C21"], technical: "486 Busy Here", size: 900, limit: 768,
            participant: "0f9c1d2e", reason: "badSignature")
    ]
}

extension ListResult: ControlShape {
    /// `list`'s result.
    public static let noun = ControlNoun("a page of conversations", plural: "pages of conversations")

    /// The members.
    public static let fields = [
        ControlField("conversations", .array(.object(ConversationInfo.self)), "the live conversations, oldest first"),
        ControlField("nextCursor", .nullable(.string), "give it as `cursor` for the next page; null on the last"),
        ControlField("total", .integer, "live conversations on every page"),
    ]

    /// A last page, and one with more to come.
    public static let examples = [
        ListResult(conversations: [ConversationInfo.examples[0]]),
        ListResult(conversations: [ConversationInfo.examples[0]], nextCursor: "c1.a83f.1", total: 2),
    ]
}

extension SubscribeResult: ControlShape {
    /// `subscribe`'s result.
    public static let noun = ControlNoun("a subscription", plural: "subscriptions")

    /// The members.
    public static let fields = [ControlField("events", .array(.string), "the names of the events that will come")]

    /// Two names.
    public static let examples = [SubscribeResult(events: ["conversationChanged", "historyChanged"])]
}

extension HistoryResult: ControlShape {
    /// `history`'s result.
    public static let noun = ControlNoun("a page of history", plural: "pages of history")

    /// The members.
    public static let fields = [
        ControlField("records", .array(.object(HistoryRecordInfo.self)), "the records, newest first"),
        ControlField("nextCursor", .nullable(.string), "give it as `cursor` for the next page; null on the last"),
    ]

    /// A page, and the last.
    public static let examples = [
        HistoryResult(records: HistoryRecordInfo.examples, nextCursor: "h1.42"),
        HistoryResult(records: [], nextCursor: nil),
    ]
}

extension HistoryCountResult: ControlShape {
    /// A count.
    public static let noun = ControlNoun("a count", plural: "counts")

    /// The members.
    public static let fields = [ControlField("count", .integer, "how many records matched, changed or went")]

    /// One.
    public static let examples = [HistoryCountResult(count: 1)]
}

extension ContactResult: ControlShape {
    /// `contact`'s result.
    public static let noun = ControlNoun("a contact lookup", plural: "contact lookups")

    /// The members.
    public static let fields = [
        ControlField("handle", .object(HandleInfo.self), "the value as parleyd read it: its kind decides how it matched (see Handles)"),
        ControlField("contactName", .nullable(.string), "the matching contact's name, else null"),
    ]

    /// Found, and not.
    public static let examples = [
        ContactResult(handle: HandleInfo.examples[1], contactName: "Alice Liddell"),
        ContactResult(handle: HandleInfo.examples[0], contactName: nil),
    ]
}

extension ContactsResult: ControlShape {
    /// `contacts`' result.
    public static let noun = ControlNoun("a contact search", plural: "contact searches")

    /// The members.
    public static let fields = [ControlField("contacts", .array(.object(ContactInfo.self)), "the matching contacts, by name")]

    /// One contact.
    public static let examples = [ContactsResult(contacts: ContactInfo.examples)]
}

extension ReloadContactsResult: ControlShape {
    /// `reloadContacts`' result.
    public static let noun = ControlNoun("a contacts reload", plural: "contacts reloads")

    /// The members.
    public static let fields = [
        ControlField("contacts", .integer, "contacts read"),
        ControlField("conflicts", .integer, "numbers or addresses two contacts claim (the first keeps it)"),
    ]

    /// A reload.
    public static let examples = [ReloadContactsResult(contacts: 3, conflicts: 0)]
}

extension SilenceResult: ControlShape {
    /// `silence`'s result.
    public static let noun = ControlNoun("a silenced ringtone", plural: "silenced ringtones")

    /// The members.
    public static let fields = [
        ControlField("conversation", .string, "the conversation's uuid"),
        ControlField("silenced", .boolean, "whether it was ringing (it rings on without sound); false when it does not ring"),
    ]

    /// A ringing call silenced.
    public static let examples = [SilenceResult(conversation: "1F2E3D4C-5B6A-4789-8796-A5B4C3D2E1F0", silenced: true)]
}

extension ConversationChanged: ControlShape {
    /// The `conversationChanged` event's data.
    public static let noun = ControlNoun("a conversation change", plural: "conversation changes")

    /// The members.
    public static let fields = [
        ControlField("conversation", .object(ConversationInfo.self), "the conversation after the change"),
        ControlField("from", .nullable(.oneOf(ControlWords.states)), "its state before; null the first time it is seen"),
        ControlField(
            "changes", .array(.string),
            "the members of the conversation that changed, by name (`state`, `isMuted`…), or `new` the first time"),
    ]

    /// A new conversation, and a state change.
    public static let examples = [
        ConversationChanged(conversation: ConversationInfo.examples[0], from: nil, changes: ["new"]),
        ConversationChanged(conversation: ConversationInfo.examples[1], from: "ringing", changes: ["state", "endedAt"]),
    ]
}

extension TonesReceived: ControlShape {
    /// The `tonesReceived` event's data.
    public static let noun = ControlNoun("tones", plural: "tones")

    /// The members.
    public static let fields = [
        ControlField("conversation", .string, "the conversation's uuid"),
        ControlField("digits", .string, "the keypad digits, in order (`0`–`9`, `*`, `#`, `A`–`D`)"),
    ]

    /// Two digits.
    public static let examples = [TonesReceived(conversation: "8C1F0E4B-2A53-4C2B-9E0A-6D1F3B7A9C21", digits: "5#")]
}

extension TransferProgress: ControlShape {
    /// The `transferProgress` event's data.
    public static let noun = ControlNoun("a transfer's progress", plural: "transfers' progress")

    /// The members.
    public static let fields = [
        ControlField("conversation", .string, "the uuid of the call whose peer is handed over"),
        ControlField("role", .oneOf(["transferor", "transferee"]), "`transferor`: we hand the peer over and it reports; `transferee`: the peer hands us over and we report"),
        ControlField("status", .integer, "the new call's status: 100 trying, 180 ringing, 200 answered, 486 busy…"),
        ControlField("reason", .string, "its reason phrase"),
        ControlField("final", .boolean, "whether it is the outcome: nothing more comes"),
    ]

    /// Ringing at the target, then answered.
    public static let examples = [
        TransferProgress(conversation: "8C1F0E4B-2A53-4C2B-9E0A-6D1F3B7A9C21", role: "transferor", status: 180, reason: "Ringing", final: false),
        TransferProgress(conversation: "8C1F0E4B-2A53-4C2B-9E0A-6D1F3B7A9C21", role: "transferee", status: 200, reason: "OK", final: true),
    ]
}

extension HistoryChanged: ControlShape {
    /// The `historyChanged` event's data.
    public static let noun = ControlNoun("a history change", plural: "history changes")

    /// The members.
    public static let fields = [
        ControlField("change", .oneOf(["inserted", "read", "deleted", "cleared"]), "what happened"),
        ControlField("records", .array(.integer), "the records' ids; empty for every record (`markRead` all, `clearHistory`)"),
        ControlField("conversation", .nullable(.string), "the conversation recorded (`inserted`), else null"),
    ]

    /// A record inserted, and all marked read.
    public static let examples = [
        HistoryChanged(change: "inserted", records: [5], conversation: "8C1F0E4B-2A53-4C2B-9E0A-6D1F3B7A9C21"),
        HistoryChanged(change: "read", records: []),
    ]
}

extension PushReceived: ControlShape {
    /// The `pushReceived` event's data.
    public static let noun = ControlNoun("a push", plural: "pushes")

    /// The members.
    public static let fields = [
        ControlField("callID", .string, "the call's SIP Call-ID, as the push named it"),
        ControlField(
            "handling", .oneOf(["reported", "alreadyReported", "reportedAndEnded", "cancelled", "notReported"]),
            "what parleyd did with it"),
        ControlField("conversation", .nullable(.string), "the conversation it reported or ended, else null"),
        ControlField("reason", .nullable(.string), "why it was ended at once or not reported, else null"),
    ]

    /// Reported, and not.
    public static let examples = [
        PushReceived(callID: "8f2a@127.0.0.1", handling: "reported", conversation: "8C1F0E4B-2A53-4C2B-9E0A-6D1F3B7A9C21", reason: nil),
        PushReceived(callID: "8f2a@127.0.0.1", handling: "notReported", conversation: nil, reason: "the push has expired"),
    ]
}

extension ActionSettled: ControlShape {
    /// The `actionSettled` event's data.
    public static let noun = ControlNoun("a settled action", plural: "settled actions")

    /// The members.
    public static let fields = [
        ControlField("action", .oneOf(ControlWords.actions), "the action, by the method that asks for it (a `mute` with `muted: false` is an `unmute`)"),
        ControlField("actionUUID", .string, "the action's uuid (an action result names it)"),
        ControlField("conversation", .string, "the uuid of the conversation it acted on (not the conversation itself)"),
        ControlField("state", .oneOf(["complete", "failed", "timedOut"]), "how it ended"),
        ControlField("error", .nullable(.object(ControlError.self)), "why it failed or timed out, with the peer's SIP status in `details`; null when complete"),
    ]

    /// Completed, and failed.
    public static let examples = [
        ActionSettled(
            action: "hold", actionUUID: "5E0D3C1B-8A7F-4B2E-9D6C-1F4A3B2C5D6E", conversation: "8C1F0E4B-2A53-4C2B-9E0A-6D1F3B7A9C21",
            state: "complete", error: nil),
        ActionSettled(
            action: "start", actionUUID: "6A1B2C3D-4E5F-4A6B-8C7D-9E0F1A2B3C4D", conversation: "3F2A9D10-7B6E-4E1C-A5D4-2C8B0F9E6A13",
            state: "failed", error: ControlError.examples[0]),
    ]
}
