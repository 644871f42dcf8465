import Collaboration
import ConversationKit
import Foundation
import GroupActivities

/// docs/control-api.md, generated from this module's types (a test fails when the file drifts; `parley reference
/// control-api > docs/control-api.md` writes it again). Every object parleyd sends is a ``ControlShape`` whose table
/// is generated from its fields; a test checks each shape's examples against its table, and the frontend check
/// (Tests/Frontend/frontend_check.py) checks what a running parleyd sends against the tables it reads from the
/// document.
public enum ControlReference {
    /// One documented limit of a connection.
    public struct Limit: Sendable {
        /// What it is called.
        public let name: String
        /// Its default.
        public let value: String
        /// What happens at it.
        public let effect: String
        /// A limit.
        public init(_ name: String, _ value: String, _ effect: String) {
            self.name = name
            self.value = value
            self.effect = effect
        }
    }

    /// The shapes other members refer to, in the order the Shapes section lists them.
    public static let namedShapes: [any ControlShape.Type] = [
        ConversationInfo.self, HandleInfo.self, ActionResult.self, ControlError.self, ControlError.Details.self,
        HistoryRecordInfo.self, MediaInfo.self, MediaStatsInfo.self, VideoInfo.self, VideoStatsInfo.self, RegistrationInfo.self,
        DaemonFacts.self,
        StatusCounters.self, StatusLimits.self, ContactInfo.self, GroupSessionData.self, GroupActivity.self,
        GroupParticipantInfo.self, GroupSendResult.self, CollaborationData.self, CollaborationParticipantData.self,
        CollaborationMetadataInfo.self, NameComponentsInfo.self, ShareOptionsInfo.self, OptionsGroupInfo.self,
        OptionInfo.self, CollaborationChallenge.self, SignedProofJSON.self, AudioDeviceInfo.self,
        VideoDeviceInfo.self,
    ]

    /// What each method answers with.
    public static func resultShape(of method: ControlMethodName) -> any ControlShape.Type {
        switch method {
        case .status: StatusResult.self
        case .list: ListResult.self
        case .subscribe: SubscribeResult.self
        case .start, .join, .end, .hold, .resume, .mute, .unmute, .playTone, .video, .merge, .unmerge, .transfer, .redial:
            ActionResult.self
        case .mediaStats: MediaStatsResult.self
        case .browserAudio: BrowserAudioResult.self
        case .browserAudioEnd: BrowserAudioEnded.self
        case .doNotDisturb: DoNotDisturbState.self
        case .forwarding: ForwardingState.self
        case .audioDevices: AudioDevicesResult.self
        case .setAudioDevice: AudioDeviceChoice.self
        case .videoDevices: VideoDevicesResult.self
        case .setVideoSource: VideoSourceChoice.self
        case .silence: SilenceResult.self
        case .history: HistoryResult.self
        case .historyCount, .markRead, .deleteRecord, .clearHistory: HistoryCountResult.self
        case .contact: ContactResult.self
        case .contacts: ContactsResult.self
        case .reloadContacts: ReloadContactsResult.self
        case .groupSessions: GroupSessionsResult.self
        case .groupActivate, .groupJoin: GroupSessionData.self
        case .groupLeave, .groupEnd: GroupLeft.self
        case .groupSend: GroupSendResult.self
        case .identity: IdentityResult.self
        case .collaborations: CollaborationsResult.self
        case .collaborationStart, .collaborationOpen: CollaborationData.self
        case .collaborationChallenge: CollaborationChallenge.self
        case .collaborationProve: SignedProofJSON.self
        case .collaborationVerify, .collaborationReplaceIdentity: CollaborationGranted.self
        case .collaborationConfirm: CollaborationConfirmed.self
        case .collaborationNotice: CollaborationPosted.self
        case .collaborationEnd: CollaborationEnded.self
        case .identityUpdateProve: IdentityUpdateProof.self
        }
    }

    /// What each event carries in `data`.
    public static func dataShape(of event: ControlEventMessage.Name) -> any ControlShape.Type {
        switch event {
        case .conversationChanged: ConversationChanged.self
        case .tonesReceived: TonesReceived.self
        case .transferProgress: TransferProgress.self
        case .audioLevels: AudioLevelsEvent.self
        case .mediaChanged: MediaChanged.self
        case .mediaStats: MediaStats.self
        case .browserAudioChanged: BrowserAudioChanged.self
        case .doNotDisturbChanged: DoNotDisturbState.self
        case .audioRouteChanged: AudioRouteChanged.self
        case .historyChanged: HistoryChanged.self
        case .registrationChanged: RegistrationInfo.self
        case .pushReceived: PushReceived.self
        case .actionSettled: ActionSettled.self
        case .groupSessionChanged: GroupSessionChanged.self
        case .groupParticipantsChanged: GroupParticipantsChanged.self
        case .groupMessage: GroupMessageReceived.self
        case .groupSendResult: GroupSendResult.self
        case .textMessage: TextMessageReceived.self
        case .collaborationChanged: CollaborationChanged.self
        case .collaborationParticipantsUpdate: CollaborationUpdateEvent.self
        case .collaborationActionCompleted: CollaborationActionCompleted.self
        case .collaborationVerified: CollaborationVerified.self
        case .collaborationNotice: CollaborationNoticeEvent.self
        case .identityAnnounced: IdentityAnnounced.self
        }
    }

    /// Every shape the document has a table for: the named ones, every result and every event's data.
    public static var allShapes: [any ControlShape.Type] {
        var seen = Set<ObjectIdentifier>()
        var shapes: [any ControlShape.Type] = []
        let roots = namedShapes + ControlMethodName.allCases.map(resultShape) + ControlEventMessage.Name.allCases.map(dataShape)
        for shape in roots where seen.insert(ObjectIdentifier(shape)).inserted { shapes.append(shape) }
        return shapes
    }

    /// Whether `shape` is documented under Shapes (and referred to by its noun) rather than where it is used.
    public static func isNamed(_ shape: any ControlShape.Type) -> Bool {
        namedShapes.contains { ObjectIdentifier($0) == ObjectIdentifier(shape) }
    }

    /// The whole document.
    public static func markdown(limits: [Limit]) -> String {
        var text = header
        text += "\n## Limits\n\n| limit | default | at the limit |\n|---|---|---|\n"
        for limit in limits { text += "| \(limit.name) | \(limit.value) | \(limit.effect) |\n" }
        text += "\n## Shapes\n\n" + shapeRules
        text += "\nThe objects below, as a type names one of them and several:\n\n| one | several |\n|---|---|\n"
        for shape in namedShapes { text += "| \(shape.noun.singular) | \(shape.noun.plural) |\n" }
        for shape in namedShapes { text += "\n### \(shape.noun.title)\n\n" + (shape.note.map { $0 + "\n\n" } ?? "") + table(shape) }
        text += "\nStates: " + ControlWords.states.map { "`\($0)`" }.joined(separator: ", ")
            + " (docs/lifecycle.md has every transition). Why a conversation ended, and the `status` of its history record "
            + "when it never connected (one that connected is `connected`):\n\n"
            + "| `endedReason` | meaning | status, incoming | status, outgoing |\n|---|---|---|---|\n"
        for reason in Conversation.EndedReason.allCases {
            let status = historyStatus(of: reason)
            text += "| `\(reason.rawValue)` | \(meaning(of: reason)) | `\(status.incoming)` | `\(status.outgoing)` |\n"
        }
        text += "\n## Methods\n"
        for method in ControlMethodName.allCases {
            let type = ControlCommand.paramsType(of: method)
            text += "\n### `\(method.rawValue)`\n\n\(summary(of: method)).\n\n"
            if type.fields.isEmpty {
                text += "No parameters.\n"
            } else {
                text += "| param | type | |\n|---|---|---|\n"
                for field in type.fields {
                    text += "| `\(field.name)` | \(field.type)\(field.isOptional ? ", optional" : "") | \(field.summary) |\n"
                }
            }
            text += "\n```json\n" + example(method, type) + "\n```\n\n" + result(of: method)
        }
        text += "\n## Events\n\nAfter `subscribe`, every event comes as `{\"v\": 1, \"event\": name, \"data\": {…}}`.\n"
        for event in ControlEventMessage.Name.allCases {
            text += "\n### `\(event.rawValue)`\n\n" + summary(of: event) + ".\n\n"
            let shape = dataShape(of: event)
            text += isNamed(shape) ? "Data: \(shape.noun.singular) (see Shapes).\n" : "Data:\n\n" + table(shape)
        }
        text += errorsSection
        return text
    }

    /// A method's result: a named shape by its noun, else its own table.
    private static func result(of method: ControlMethodName) -> String {
        let shape = resultShape(of: method)
        let note = resultNote(of: method).map { " " + $0 } ?? ""
        if isNamed(shape) { return "Result: \(shape.noun.singular) (see Shapes).\(note)\n" }
        return "Result:\(note)\n\n" + table(shape)
    }

    /// A shape's table.
    static func table(_ shape: any ControlShape.Type) -> String {
        var text = "| member | type | |\n|---|---|---|\n"
        for field in shape.fields { text += "| `\(field.name)` | \(field.type) | \(field.summary) |\n" }
        return text
    }

    private static func example(_ method: ControlMethodName, _ type: any ControlParams.Type) -> String {
        func line(_ params: some ControlParams) -> String {
            let encoded = String(decoding: ControlJSON.encode(params), as: UTF8.self)
            return "{\"v\": 1, \"id\": 1, \"method\": \"\(method.rawValue)\", \"params\": \(encoded)}"
        }
        return line(type.example)
    }
}
