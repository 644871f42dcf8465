import ConversationKit
import Foundation
import Synchronization

/// What a VoIP push announced: a call that will arrive over SIP with this Call-ID. The daemon's push client turns
/// a push payload into one of these; the engine knows nothing of the push wire format.
public struct PushedCall: Sendable, Hashable {
    /// The conversation uuid the push assigns.
    public var uuid: UUID
    /// The caller.
    public var handle: Handle
    /// The SIP Call-ID the caller's INVITE will carry.
    public var callID: String
    /// Whether it is a video call.
    public var isVideo: Bool
    /// After this the push is stale.
    public var expiresAt: Date
    /// A cancel push: the caller gave up before the INVITE was answered.
    public var isCancel: Bool

    /// A pushed call.
    public init(uuid: UUID, handle: Handle, callID: String, isVideo: Bool, expiresAt: Date, isCancel: Bool = false) {
        self.uuid = uuid
        self.handle = handle
        self.callID = callID
        self.isVideo = isVideo
        self.expiresAt = expiresAt
        self.isCancel = isCancel
    }
}

/// What the engine did with a push, decided before `handlePush` returned (the iOS contract: a VoIP push must be
/// reported as a conversation before its handler returns).
public enum PushHandling: Sendable, Hashable, CustomStringConvertible {
    /// A new ringing conversation was reported.
    case reported(UUID)
    /// The conversation already exists (the INVITE came first, or the push was delivered twice): nothing new.
    case alreadyReported(UUID)
    /// The push was unusable (expired, unsupported handle kind, duplicate uuid, bad Call-ID): a conversation was
    /// reported and ended at once as failed, so the contract holds without a strike.
    case reportedAndEnded(UUID, reason: String)
    /// A cancel push: the pending conversation (if any) ended as unanswered.
    case cancelled(UUID?)
    /// Nothing could be reported (the engine is shutting down): a strike the device earns honestly.
    case notReported(reason: String)

    /// Whether the device can tell the push service it reported a conversation.
    public var reported: Bool {
        switch self {
        case .reported, .alreadyReported, .reportedAndEnded, .cancelled: true
        case .notReported: false
        }
    }

    /// For logs.
    public var description: String {
        switch self {
        case .reported(let uuid): "reported \(uuid)"
        case .alreadyReported(let uuid): "already reported \(uuid)"
        case .reportedAndEnded(let uuid, let reason): "reported and ended \(uuid): \(reason)"
        case .cancelled(let uuid): "cancelled \(uuid.map(\.uuidString) ?? "(nothing pending)")"
        case .notReported(let reason): "not reported: \(reason)"
        }
    }
}

/// Calls announced by a push whose INVITE has not arrived yet, by Call-ID. Shared between the push handler's thread
/// (which must register a call before it returns) and the engine's thread (which claims it when the INVITE comes).
final class PushedCallRegistry: Sendable {
    /// One announced call.
    struct Entry: Sendable {
        let call: PushedCall
        /// The user answered before the INVITE arrived: the Join waits for it.
        var pendingJoin: ConversationAction?
        /// The user declined (End) before the INVITE arrived: the INVITE is refused.
        var declined = false
    }

    private let entries = Mutex<[String: Entry]>([:])
    /// Call-IDs chosen in advance for outgoing calls, by conversation.
    private let outgoing = Mutex<[UUID: String]>([:])

    /// Chooses the Call-ID of a future outgoing call.
    func assignOutgoing(callID: String, to uuid: UUID) { outgoing.withLock { $0[uuid] = callID } }

    /// Takes the Call-ID chosen for outgoing conversation `uuid`, if any.
    func takeOutgoing(uuid: UUID) -> String? { outgoing.withLock { $0.removeValue(forKey: uuid) } }

    /// Registers `call` unless its Call-ID is already there; returns the existing entry's uuid if it was.
    func register(_ call: PushedCall) -> UUID? {
        entries.withLock { entries in
            if let existing = entries[call.callID] { return existing.call.uuid }
            entries[call.callID] = Entry(call: call)
            return nil
        }
    }

    /// Whether a push announced the call with `callID` (its INVITE is let in past the limits: it already counts).
    func isPending(callID: String) -> Bool { entries.withLock { $0[callID] != nil } }

    /// Takes the entry for `callID` (the INVITE arrived).
    func claim(callID: String) -> Entry? {
        entries.withLock { $0.removeValue(forKey: callID) }
    }

    /// Marks the call with `callID` declined (a cancel push); returns its uuid, nil when it is not pending or was
    /// already declined.
    func decline(callID: String) -> UUID? {
        entries.withLock { entries in
            guard var entry = entries[callID], !entry.declined else { return nil }
            entry.declined = true
            entries[callID] = entry
            return entry.call.uuid
        }
    }

    /// Forgets conversation `uuid` unless it was declined (a declined call's entry waits to refuse its INVITE).
    func removeUnlessDeclined(uuid: UUID) {
        entries.withLock { entries in
            guard let key = entries.first(where: { $0.value.call.uuid == uuid && !$0.value.declined })?.key else {
                return
            }
            entries.removeValue(forKey: key)
        }
    }

    /// Takes the entry for `callID` (its wait ended, or the manager refused it).
    @discardableResult
    func remove(callID: String) -> Entry? {
        entries.withLock { $0.removeValue(forKey: callID) }
    }

    /// Takes the entry of conversation `uuid` (it ended or timed out).
    @discardableResult
    func remove(uuid: UUID) -> Entry? {
        entries.withLock { entries in
            guard let key = entries.first(where: { $0.value.call.uuid == uuid })?.key else { return nil }
            return entries.removeValue(forKey: key)
        }
    }

    /// Changes the entry of conversation `uuid`; false when there is none.
    func update(uuid: UUID, _ change: (inout Entry) -> Void) -> Bool {
        entries.withLock { entries in
            guard let key = entries.first(where: { $0.value.call.uuid == uuid })?.key else { return false }
            change(&entries[key]!)
            return true
        }
    }

    /// Whether conversation `uuid` waits for its INVITE.
    func contains(uuid: UUID) -> Bool {
        entries.withLock { $0.values.contains { $0.call.uuid == uuid } }
    }
}
