import Collaboration
import ConversationKit
import Foundation

/// A structured error: a stable code a frontend switches on, a short sentence fit for a toast, and details (the
/// offending field, the SIP status…) for whoever wants more. Connection-level errors (``Code/isConnectionLevel``)
/// come in `{"v":1,"type":"error","id":null,"error":{…}}` from the transport itself.
public struct ControlError: Error, Sendable, Equatable, Codable, CustomStringConvertible {
    /// The stable codes.
    public enum Code: String, Sendable, Codable, CaseIterable {
        /// The message is not valid JSON.
        case parseError
        /// Valid JSON, but not a request (not an object, no usable `id`, no `method`).
        case invalidRequest
        /// The `v` member is missing or not 1.
        case unsupportedVersion
        /// No such method (`details.methods` lists them).
        case unknownMethod
        /// A parameter is missing or has the wrong type or value (`details.field` names it).
        case invalidParams
        /// The conversation or record named does not exist, or a prefix is ambiguous (`details.matches`).
        case notFound
        /// The engine refused the action: its state, capabilities or limits do not allow it now.
        case refused
        /// The action ran and failed (`details.sipStatus`/`sipReason` when the network said why).
        case failed
        /// The action did not complete in time.
        case timedOut
        /// This parleyd does not offer what was asked (no call history, no contacts file).
        case unavailable
        /// Connection level: the first message was not a hello with the right token, or did not come within the
        /// hello deadline. The connection is closed.
        case unauthorized
        /// Connection level: a message was larger than the limit. The connection is closed.
        case frameTooLarge
        /// Connection level, Unix socket: a line was not valid UTF-8. It was skipped; the connection stays. (A
        /// WebSocket text frame that is not UTF-8 closes the connection with 1007, as RFC 6455 §8.1 requires.)
        case invalidFrame
        /// Connection level: every client slot is taken by a client that cannot be evicted. The connection is
        /// closed; try again later.
        case tooManyClients
        /// Connection level: this idle client, which never subscribed, was closed to make room for a new one.
        case evicted
        /// A group message over the session's size limit.
        case messageTooLarge
        /// Too many group messages lately.
        case throttled
        /// Not joined to that group session.
        case notJoined
        /// No such active participant.
        case unknownParticipant
        /// The participant left before delivery.
        case participantLeft
        /// A collaboration proof was checked and refused (`details.reason`).
        case proofRejected

        /// Whether the transport sends it (outside any request).
        public var isConnectionLevel: Bool {
            switch self {
            case .unauthorized, .frameTooLarge, .invalidFrame, .tooManyClients, .evicted: true
            default: false
            }
        }

        /// What it means, for the reference.
        public var meaning: String {
            switch self {
            case .parseError: "the message is not valid JSON (`id` is null in the answer)"
            case .invalidRequest: "valid JSON but not a request: not an object, no integer or short string `id`, no `method`"
            case .unsupportedVersion:
                "`v` is missing or not 1: in a hello, a connection-level error and the connection is closed; in a request, that request's answer"
            case .unknownMethod: "no such method (`details.methods` lists them)"
            case .invalidParams: "a parameter is missing or has the wrong type or value (`details.field` names it)"
            case .notFound:
                "no live conversation by that uuid or prefix (`details.matches` when ambiguous), or no such history record"
            case .refused: "the engine refused the action now: its state, capabilities or limits do not allow it"
            case .failed: "the action ran and failed (`details.sipStatus` and `details.sipReason` when the peer said why)"
            case .timedOut: "the action did not complete in time"
            case .unavailable: "this parleyd does not offer it (started with `--no-history`, or without `--contacts`)"
            case .unauthorized: "connection: no hello with the right token within the hello deadline; closed"
            case .frameTooLarge: "connection: a message over the size limit; closed"
            case .invalidFrame:
                "connection, Unix socket only: a line that is not UTF-8; skipped, the connection stays (over WebSocket, RFC 6455 has parleyd close with 1007 instead)"
            case .tooManyClients: "connection: every client slot is taken and none can be evicted; closed (try later)"
            case .evicted: "connection: an idle client that never subscribed, closed to make room for a new one"
            case .messageTooLarge: "a group message's type and data are over the session's limit (`details.size`, `details.limit`)"
            case .throttled: "the sender sent too many group messages lately, or a leg has too much waiting: try again after `details.retryAfterMs`"
            case .notJoined: "this side has not joined that group session, or its call is not connected"
            case .unknownParticipant:
                "no active participant with that id (`details.participant`), or, for a mention, nobody in the group with that root (`details.field` is `person`)"
            case .participantLeft: "a participant left the session before the message reached it (`details.participant`)"
            case .proofRejected:
                "a collaboration proof was refused; `details.reason` is one of " + ProofRejectionNames.all + " (docs/collaboration.md)"
            }
        }
    }

    /// Structured facts about an error; only those that apply are present (the one object whose absent members are
    /// left out rather than written as `null`). Every key any error uses is listed here, spelt once.
    public struct Details: Sendable, Equatable, Codable {
        /// The parameter at fault.
        public var field: String?
        /// The final SIP status the peer answered with (486, 603, 415…).
        public var sipStatus: Int?
        /// Its reason phrase, as the peer wrote it.
        public var sipReason: String?
        /// When trying again may work, in milliseconds (a SIP Retry-After, a throttle).
        public var retryAfterMs: Int?
        /// The action that failed (`start`, `hold`…).
        public var action: String?
        /// The methods there are (with `unknownMethod`).
        public var methods: [String]?
        /// The conversations an ambiguous prefix names (with `notFound`).
        public var matches: [String]?
        /// The log's own words, for bug reports.
        public var technical: String?
        /// A group message's size, in bytes.
        public var size: Int?
        /// The limit that was reached: a group message's bytes, a count of collaborations.
        public var limit: Int?
        /// The group participant at fault.
        public var participant: String?
        /// Why a proof was refused (`proofRejected`).
        public var reason: String?

        /// Details; omitted members are absent.
        public init(
            field: String? = nil, sipStatus: Int? = nil, sipReason: String? = nil, retryAfterMs: Int? = nil,
            action: String? = nil, methods: [String]? = nil, matches: [String]? = nil, technical: String? = nil,
            size: Int? = nil, limit: Int? = nil, participant: String? = nil, reason: String? = nil
        ) {
            self.field = field
            self.sipStatus = sipStatus
            self.sipReason = sipReason
            self.retryAfterMs = retryAfterMs
            self.action = action
            self.methods = methods
            self.matches = matches
            self.technical = technical
            self.size = size
            self.limit = limit
            self.participant = participant
            self.reason = reason
        }
    }

    /// The code.
    public let code: Code
    /// A short sentence for people, fit for a toast.
    public let message: String
    /// Extra structured information, or null when there is none.
    @Nullable public private(set) var details: Details?

    /// An error.
    public init(_ code: Code, _ message: String, details: Details? = nil) {
        self.code = code
        self.message = message
        self.details = details
    }

    /// An error about one parameter.
    public init(_ code: Code, _ message: String, field: String?) {
        self.init(code, message, details: field.map { Details(field: $0) })
    }

    /// `invalidParams: Missing "to".`
    public var description: String { "\(code.rawValue): \(message)" }
}

extension ControlError {
    /// The error a refused action becomes: a sentence about what the user tried (on a call going `direction`), the
    /// manager's words as details.
    public static func refused(
        _ error: ConversationManagerError, action: String, direction: Conversation.Direction? = nil
    ) -> ControlError {
        let details = Details(action: action, technical: error.description)
        switch error {
        case .unknownConversation, .conversationEnded:
            return ControlError(.notFound, "That call has already ended.", details: details)
        case .illegalTransition(let rejection):
            if action == "join", direction == .outgoing {
                return ControlError(.refused, "You can't answer a call you placed.", details: details)
            }
            return ControlError(.refused, Self.sentence(action, refusedIn: rejection.state), details: details)
        case .missingCapability(_, let capability):
            return ControlError(.refused, "This call cannot \(Self.verb(for: capability)).", details: details)
        case .videoNotSupported:
            return ControlError(.refused, "Video calls are off in this parleyd (start it with --video).", details: details)
        case .actionAlreadyPending:
            return ControlError(.refused, "Still working on the last \(verb(forAction: action)) of this call.", details: details)
        case .maximumConversationGroupsReached(let limit):
            return ControlError(.refused, "No more than \(limit) merged calls at once.", details: details)
        case .maximumConversationsPerGroupReached(let limit):
            return ControlError(.refused, "A merged call holds at most \(limit) calls.", details: details)
        case .cannotMergeWithItself: return ControlError(.refused, "A call cannot merge with itself.", details: details)
        case .alreadyInSameGroup: return ControlError(.refused, "Those calls are already merged.", details: details)
        case .notInGroup: return ControlError(.refused, "That call is not merged with another.", details: details)
        case .invalidToneDigits:
            return ControlError(.invalidParams, "Keypad tones are 0-9, *, # and A-D.", details: Details(field: "digits"))
        case .unsupportedHandleKind: return ControlError(.invalidParams, "That address cannot be called.", details: details)
        case .managerInvalidated: return ControlError(.refused, "parleyd is shutting down.", details: details)
        case .emptyTransaction, .conversationAlreadyExists, .duplicateActionUUID, .actionAlreadyPerformed, .noHandles,
            .invalidTimeoutDate, .invalidConfiguration:
            return ControlError(.refused, "parleyd could not do that.", details: details)
        }
    }

    /// What a person calls an action: `pause` is a hold, `join` an answer.
    public static func verb(forAction action: String) -> String {
        switch action {
        case "pause": "hold"
        case "join": "answer"
        case "playTone": "send tones on"
        case "start": "place"
        default: action
        }
    }

    /// `Can't hold this call: it is already on hold.`
    static func sentence(_ action: String, refusedIn state: Conversation.State) -> String {
        let action = verb(forAction: action)
        let what: String
        switch state {
        case .idle: what = "it has not started yet"
        case .ringing: what = "it is still ringing"
        case .joining: what = "it is still connecting"
        case .joined: what = action == "resume" ? "it is not on hold" : "it is already connected"
        case .paused: what = action == "hold" ? "it is already on hold" : "it is on hold"
        case .leaving: what = "it is ending"
        case .left: what = "it has ended"
        }
        return "Can't \(action) this call: \(what)."
    }

    static func verb(for capability: Conversation.Capabilities) -> String {
        switch capability {
        case .merging: "be merged"
        case .unmerging: "be split from its group"
        case .pausing: "be put on hold"
        case .playingTones: "send keypad tones"
        case .video: "carry video"
        default: "do that"
        }
    }
}
