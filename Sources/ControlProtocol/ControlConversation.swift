import ConversationKit
import Foundation

/// A handle as the protocol writes it: who someone is, and what to show for them.
public struct HandleInfo: Codable, Sendable, Equatable {
    /// `phoneNumber`, `emailAddress` or `generic`.
    public var kind: String
    /// The address as it was given or received: a SIP URI is kept whole, so it can be dialled back exactly.
    public var value: String
    /// The SIP display name, else the value.
    public var displayName: String
    /// The name of the matching contact (by Parley's matching rules), or null.
    @Nullable public var contactName: String?

    /// A handle.
    public init(_ handle: Handle, contactName: String?) {
        kind = handle.kind.description
        value = handle.value
        displayName = handle.displayName
        self.contactName = contactName
    }

    /// What a UI shows: the contact's name, else the display name.
    public var shownName: String { contactName ?? displayName }
}

/// A conversation's full state as the protocol writes it, in `list`, action results and `conversationChanged`.
public struct ConversationInfo: Codable, Sendable, Equatable {
    /// The uuid.
    public var uuid: String
    /// `idle`, `ringing`, `joining`, `joined`, `paused`, `leaving` or `left`.
    public var state: String
    /// `incoming` or `outgoing`.
    public var direction: String
    /// What a UI shows for the other side: contact names, else SIP display names, joined with ", ".
    public var displayName: String
    /// The remote members.
    public var members: [HandleInfo]
    /// The remote members whose media flows now.
    public var activeRemoteMembers: [HandleInfo]
    /// Our own handle, when known.
    @Nullable public var localMember: HandleInfo?
    /// The account it goes through (an address of record), or null.
    @Nullable public var account: String?
    /// How its media is protected (`sdes`), or null while plain.
    @Nullable public var encryption: String?
    /// The conversation whose peer transferred us into this one, or null.
    @Nullable public var transferredFrom: String?
    /// The peer has put us on hold (joined or paused, members but none active).
    public var isRemotelyHeld: Bool
    /// We are muted.
    public var isMuted: Bool
    /// It carries video.
    public var isVideo: Bool
    /// A VoIP push announced it (before its INVITE).
    public var viaPush: Bool
    /// A group session may be activated on it now (Apple's `GroupStateObserver.isEligibleForGroupSession`): it is
    /// joined or paused.
    public var canShareActivity: Bool
    /// What it can do now.
    public var capabilities: [String]
    /// The actions running on it now (a UI's spinner), by name.
    public var pendingActions: [String]
    /// The group it is merged into, or null.
    @Nullable public var group: String?
    /// Its SIP Call-ID, or null.
    @Nullable public var callID: String?
    /// When parleyd first knew of it.
    public var createdAt: String
    /// When media first connected, or null.
    @Nullable public var connectedAt: String?
    /// When it ended, or null.
    @Nullable public var endedAt: String?
    /// Why it ended, or null while live.
    @Nullable public var endedReason: String?
    /// The final SIP status that ended it (486, 603…), or null.
    @Nullable public var sipStatus: Int?
    /// That status's reason phrase, or null.
    @Nullable public var sipReason: String?

    /// The protocol's view of `conversation`; `contactName` names handles from the contact directory.
    public init(
        _ conversation: Conversation, callID: String?, pendingActions: [String], finalStatus: (Int, String)? = nil,
        viaPush: Bool = false, contactName: (Handle) -> String?
    ) {
        let remote = conversation.members.sorted { $0.value < $1.value }
        let members = remote.map { HandleInfo($0, contactName: contactName($0)) }
        uuid = conversation.uuid.uuidString
        state = "\(conversation.state)"
        direction = conversation.direction.rawValue
        displayName = members.isEmpty ? "" : members.map(\.shownName).joined(separator: ", ")
        self.members = members
        // Active members are members: their views are made once.
        activeRemoteMembers = conversation.activeRemoteMembers.sorted { $0.value < $1.value }.map { handle in
            remote.firstIndex(of: handle).map { members[$0] } ?? HandleInfo(handle, contactName: contactName(handle))
        }
        localMember = conversation.localMember.map { HandleInfo($0, contactName: nil) }
        account = conversation.account
        encryption = conversation.encryption
        transferredFrom = conversation.transferredFrom?.uuidString
        isRemotelyHeld = (conversation.state == .joined || conversation.state == .paused)
            && !conversation.members.isEmpty && conversation.activeRemoteMembers.isEmpty
        isMuted = conversation.isMuted
        isVideo = conversation.isVideo
        self.viaPush = viaPush
        canShareActivity = conversation.state == .joined || conversation.state == .paused
        capabilities = conversation.capabilities.names
        self.pendingActions = pendingActions
        group = conversation.groupUUID?.uuidString
        self.callID = callID
        createdAt = ControlTime.string(conversation.createdAt)
        connectedAt = conversation.connectedAt.map(ControlTime.string)
        endedAt = conversation.endedAt.map(ControlTime.string)
        endedReason = conversation.endedReason?.rawValue
        sipStatus = finalStatus?.0
        sipReason = finalStatus?.1
    }

    /// A conversation that has left and of which nothing more is remembered: state `left`, no members.
    public static func forgotten(uuid: String) -> ConversationInfo {
        let members = #"{"uuid": "\#(uuid)", "state": "left", "direction": "outgoing", "displayName": "", "members": [], "#
            + #""activeRemoteMembers": [], "isRemotelyHeld": false, "isMuted": false, "isVideo": false, "viaPush": false, "canShareActivity": false, "capabilities": [], "#
            + #""pendingActions": [], "createdAt": "\#(ControlTime.string(Date()))"}"#
        do {
            return try ControlJSON.decoder.decode(ConversationInfo.self, from: Data(members.utf8))
        } catch {
            preconditionFailure("the forgotten conversation's members do not decode: \(error)")
        }
    }

    /// The members that differ between `self` and `previous`, by name, in declaration order.
    public func changes(since previous: ConversationInfo?) -> [String] {
        guard let previous else { return ["new"] }
        var changed: [String] = []
        if state != previous.state { changed.append("state") }
        if displayName != previous.displayName { changed.append("displayName") }
        if members != previous.members { changed.append("members") }
        if activeRemoteMembers != previous.activeRemoteMembers { changed.append("activeRemoteMembers") }
        if localMember != previous.localMember { changed.append("localMember") }
        if account != previous.account { changed.append("account") }
        if encryption != previous.encryption { changed.append("encryption") }
        if transferredFrom != previous.transferredFrom { changed.append("transferredFrom") }
        if isRemotelyHeld != previous.isRemotelyHeld { changed.append("isRemotelyHeld") }
        if isMuted != previous.isMuted { changed.append("isMuted") }
        if isVideo != previous.isVideo { changed.append("isVideo") }
        if viaPush != previous.viaPush { changed.append("viaPush") }
        if canShareActivity != previous.canShareActivity { changed.append("canShareActivity") }
        if capabilities != previous.capabilities { changed.append("capabilities") }
        if pendingActions != previous.pendingActions { changed.append("pendingActions") }
        if group != previous.group { changed.append("group") }
        if callID != previous.callID { changed.append("callID") }
        if connectedAt != previous.connectedAt { changed.append("connectedAt") }
        if endedAt != previous.endedAt { changed.append("endedAt") }
        if endedReason != previous.endedReason { changed.append("endedReason") }
        if sipStatus != previous.sipStatus { changed.append("sipStatus") }
        if sipReason != previous.sipReason { changed.append("sipReason") }
        return changed
    }
}

/// Times on the wire: ISO 8601 in UTC with milliseconds (`2026-11-29T17:02:03.123Z`); durations are integer
/// milliseconds in members ending in `Ms`.
public enum ControlTime {
    /// `2026-11-29T17:02:03.123Z`.
    public static func string(_ date: Date) -> String {
        style.format(date)
    }

    /// The one style (made once: a format style is not free to build).
    private static let style = Date.ISO8601FormatStyle(includingFractionalSeconds: true)

    /// Reads a wire timestamp.
    public static func date(_ string: String) -> Date? {
        try? Date.ISO8601FormatStyle(includingFractionalSeconds: true).parse(string)
    }

    /// Whole milliseconds of `interval`.
    public static func milliseconds(_ interval: TimeInterval) -> Int64 { Int64((interval * 1000).rounded()) }
}
