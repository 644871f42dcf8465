import ConversationKit
import Foundation

/// Conversations and handles as the control protocol writes them.
public enum ConversationEncoding {
    /// `{"kind": "phoneNumber", "value": "+14155550100", "displayName": "Alice"}`.
    public static func json(_ handle: Handle) -> [String: Any] {
        ["kind": handle.kind.description, "value": handle.value, "displayName": handle.displayName]
    }

    /// A conversation's full state; `callID` when it has a SIP side.
    public static func json(_ conversation: Conversation, callID: String?) -> [String: Any] {
        var object: [String: Any] = [
            "uuid": conversation.uuid.uuidString,
            "state": "\(conversation.state)",
            "direction": conversation.direction.rawValue,
            "members": conversation.members.sorted { $0.value < $1.value }.map(json),
            "activeRemoteMembers": conversation.activeRemoteMembers.sorted { $0.value < $1.value }.map(json),
            "isMuted": conversation.isMuted,
            "isVideo": conversation.isVideo,
            "capabilities": conversation.capabilities.names,
            "createdAt": timestamp(conversation.createdAt),
        ]
        if let callID { object["callID"] = callID }
        if let local = conversation.localMember { object["localMember"] = json(local) }
        if let group = conversation.groupUUID { object["group"] = group.uuidString }
        if let reason = conversation.endedReason { object["endedReason"] = reason.rawValue }
        if let date = conversation.connectedAt { object["connectedAt"] = timestamp(date) }
        if let date = conversation.endedAt { object["endedAt"] = timestamp(date) }
        return object
    }

    /// ISO 8601 with milliseconds, UTC.
    static func timestamp(_ date: Date) -> String {
        date.formatted(.iso8601.year().month().day().time(includingFractionalSeconds: true).timeZone(separator: .omitted))
    }
}
