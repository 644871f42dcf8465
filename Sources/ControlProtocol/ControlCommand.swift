import Collaboration
import Foundation
import GroupActivities

/// The methods of the control protocol.
public enum ControlMethodName: String, Sendable, Codable, CaseIterable {
    /// Versions, addresses, registration, counters, limits.
    case status
    /// The live conversations.
    case list
    /// Events from now on.
    case subscribe
    /// Call someone.
    case start
    /// Answer.
    case join
    /// End or refuse.
    case end
    /// Put on hold.
    case hold
    /// Take off hold.
    case resume
    /// Mute (or, with `muted: false`, unmute).
    case mute
    /// Unmute.
    case unmute
    /// Send keypad tones.
    case playTone
    /// Turn video on or off.
    case video
    /// A call's negotiated audio and its figures (RTCP).
    case mediaStats
    /// A page's WebRTC offer for a call's audio, answered.
    case browserAudio
    /// The page no longer carries a call's audio.
    case browserAudioEnd
    /// Do-not-disturb on, off, or read.
    case doNotDisturb
    /// Call forwarding set, or read.
    case forwarding
    /// The desktop's audio devices.
    case audioDevices
    /// The devices one call plays on.
    case setAudioDevice
    /// The machine's cameras.
    case videoDevices
    /// What one call's video sends.
    case setVideoSource
    /// Stop a ringing call's ringtone (it goes on ringing).
    case silence
    /// Merge two calls.
    case merge
    /// Split a call from its group.
    case unmerge
    /// Hand a call's remote party over to someone else (blind transfer).
    case transfer
    /// A page of call history.
    case history
    /// How many records match (badges).
    case historyCount
    /// Mark records read.
    case markRead
    /// Delete a record.
    case deleteRecord
    /// Delete every record.
    case clearHistory
    /// Call a record's party again.
    case redial
    /// The contact name for a handle.
    case contact
    /// Contacts matching a query (autocomplete).
    case contacts
    /// Read the contacts file again.
    case reloadContacts
    /// The group sessions here.
    case groupSessions
    /// Share an activity in a call.
    case groupActivate
    /// Join a session a peer offered.
    case groupJoin
    /// Leave a session.
    case groupLeave
    /// End a session for everyone.
    case groupEnd
    /// Send a group message.
    case groupSend
    /// This device's collaboration identity.
    case identity
    /// The collaborations here.
    case collaborations
    /// Share a collaboration in a call.
    case collaborationStart
    /// Ask a shared collaboration's owner for access.
    case collaborationOpen
    /// A challenge for a proof (owner).
    case collaborationChallenge
    /// Sign a challenge with this device's key.
    case collaborationProve
    /// Check a proof (owner).
    case collaborationVerify
    /// Accept or refuse a participants update.
    case collaborationConfirm
    /// Post a notice.
    case collaborationNotice
    /// End a collaboration (owner).
    case collaborationEnd
    /// Vouch for this person's new device set (an old device).
    case identityUpdateProve
    /// Replace a person's stored root by their new one (owner).
    case collaborationReplaceIdentity
}

/// One documented member of a params or result object.
public struct ControlField: Sendable {
    /// The member's name.
    public let name: String
    /// Its JSON type in words: `a string`, `a boolean`, `an integer`, `a string or null`…
    public let type: String
    /// Whether a request may leave it out.
    public let isOptional: Bool
    /// What it means.
    public let summary: String
    /// The type the words describe, for members of what parleyd sends (``ControlShape``): the drift test checks
    /// values against it. Nil for a params member described in words only.
    public internal(set) var valueType: ControlType?

    /// A field.
    public init(_ name: String, _ type: String, optional: Bool = false, _ summary: String) {
        self.name = name
        self.type = type
        self.isOptional = optional
        self.summary = summary
    }
}

/// A method's parameters: Codable, documented member by member, with an example and checks beyond types.
public protocol ControlParams: Codable, Sendable, Equatable {
    /// The members, for the reference and for error messages.
    static var fields: [ControlField] { get }
    /// A request's params with every member set (the reference's example; round-tripped by a test).
    static var example: Self { get }
    /// Checks values the types cannot (ranges, digits); throws `invalidParams` naming the field.
    func validate() throws(ControlError)
}

extension ControlParams {
    /// Nothing beyond the types.
    public func validate() throws(ControlError) {}
}

/// No parameters.
public struct NoParams: ControlParams {
    /// None.
    public init() {}
    /// None.
    public static let fields: [ControlField] = []
    /// `{}`.
    public static let example = NoParams()
}

/// `{}`, or `{"audioLevels": true}` for the levels too.
public struct SubscribeParams: ControlParams {
    /// True: `audioLevels` events come too; false or absent: they do not (subscribing again changes it).
    public var audioLevels: Bool?

    /// Params.
    public init(audioLevels: Bool? = nil) { self.audioLevels = audioLevels }

    /// The members.
    public static let fields = [
        ControlField(
            "audioLevels", "a boolean", optional: true,
            "true: `audioLevels` events come too, a few a second for each call whose audio parleyd carries (a meter, who "
                + "is speaking in a group); parleyd measures levels only while some subscriber asked for them"),
    ]
    /// An example.
    public static let example = SubscribeParams(audioLevels: true)
}

/// A typed request: the method and its parameters, decoded and checked.
public enum ControlCommand: Sendable, Equatable, Encodable {
    /// `status`.
    case status
    /// `list`.
    case list(ListParams)
    /// `subscribe`.
    case subscribe(SubscribeParams)
    /// `start`.
    case start(StartParams)
    /// `join`.
    case join(JoinParams)
    /// `end`.
    case end(ConversationParams)
    /// `hold`.
    case hold(ConversationParams)
    /// `resume`.
    case resume(ConversationParams)
    /// `mute`.
    case mute(MuteParams)
    /// `unmute`.
    case unmute(ConversationParams)
    /// `playTone`.
    case playTone(ToneParams)
    /// `video`.
    case video(VideoParams)
    /// `mediaStats`.
    case mediaStats(ConversationParams)
    /// `browserAudio`.
    case browserAudio(BrowserAudioParams)
    /// `browserAudioEnd`.
    case browserAudioEnd(ConversationParams)
    /// `doNotDisturb`.
    case doNotDisturb(DoNotDisturbParams)
    /// `forwarding`.
    case forwarding(ForwardingParams)
    /// `audioDevices`.
    case audioDevices
    /// `setAudioDevice`.
    case setAudioDevice(SetAudioDeviceParams)
    /// `videoDevices`.
    case videoDevices
    /// `setVideoSource`.
    case setVideoSource(SetVideoSourceParams)
    /// `silence`.
    case silence(ConversationParams)
    /// `merge`.
    case merge(MergeParams)
    /// `unmerge`.
    case unmerge(ConversationParams)
    /// `transfer`.
    case transfer(TransferParams)
    /// `history`.
    case history(HistoryParams)
    /// `historyCount`.
    case historyCount(HistoryFilter)
    /// `markRead`.
    case markRead(MarkReadParams)
    /// `deleteRecord`.
    case deleteRecord(RecordParams)
    /// `clearHistory`.
    case clearHistory
    /// `redial`.
    case redial(RecordParams)
    /// `contact`.
    case contact(ContactParams)
    /// `contacts`.
    case contacts(ContactSearchParams)
    /// `reloadContacts`.
    case reloadContacts
    /// `groupSessions`.
    case groupSessions
    /// `groupActivate`.
    case groupActivate(GroupActivateParams)
    /// `groupJoin`.
    case groupJoin(GroupSessionParams)
    /// `groupLeave`.
    case groupLeave(GroupSessionParams)
    /// `groupEnd`.
    case groupEnd(GroupSessionParams)
    /// `groupSend`.
    case groupSend(GroupSendParams)
    /// `identity`.
    case identity
    /// `collaborations`.
    case collaborations
    /// `collaborationStart`.
    case collaborationStart(CollaborationStartParams)
    /// `collaborationOpen`.
    case collaborationOpen(CollaborationParams)
    /// `collaborationChallenge`.
    case collaborationChallenge(CollaborationParams)
    /// `collaborationProve`.
    case collaborationProve(CollaborationChallenge)
    /// `collaborationVerify`.
    case collaborationVerify(CollaborationVerifyParams)
    /// `collaborationConfirm`.
    case collaborationConfirm(CollaborationConfirmParams)
    /// `collaborationNotice`.
    case collaborationNotice(CollaborationNoticeParams)
    /// `collaborationEnd`.
    case collaborationEnd(CollaborationParams)
    /// `identityUpdateProve`.
    case identityUpdateProve(IdentityUpdateProveParams)
    /// `collaborationReplaceIdentity`.
    case collaborationReplaceIdentity(CollaborationReplaceIdentityParams)

    /// The method it is.
    public var method: ControlMethodName {
        switch self {
        case .status: .status
        case .list: .list
        case .subscribe: .subscribe
        case .start: .start
        case .join: .join
        case .end: .end
        case .hold: .hold
        case .resume: .resume
        case .mute: .mute
        case .unmute: .unmute
        case .playTone: .playTone
        case .video: .video
        case .mediaStats: .mediaStats
        case .browserAudio: .browserAudio
        case .browserAudioEnd: .browserAudioEnd
        case .doNotDisturb: .doNotDisturb
        case .forwarding: .forwarding
        case .audioDevices: .audioDevices
        case .setAudioDevice: .setAudioDevice
        case .videoDevices: .videoDevices
        case .setVideoSource: .setVideoSource
        case .silence: .silence
        case .merge: .merge
        case .unmerge: .unmerge
        case .transfer: .transfer
        case .history: .history
        case .historyCount: .historyCount
        case .markRead: .markRead
        case .deleteRecord: .deleteRecord
        case .clearHistory: .clearHistory
        case .redial: .redial
        case .contact: .contact
        case .contacts: .contacts
        case .reloadContacts: .reloadContacts
        case .groupSessions: .groupSessions
        case .groupActivate: .groupActivate
        case .groupJoin: .groupJoin
        case .groupLeave: .groupLeave
        case .groupEnd: .groupEnd
        case .groupSend: .groupSend
        case .identity: .identity
        case .collaborations: .collaborations
        case .collaborationStart: .collaborationStart
        case .collaborationOpen: .collaborationOpen
        case .collaborationChallenge: .collaborationChallenge
        case .collaborationProve: .collaborationProve
        case .collaborationVerify: .collaborationVerify
        case .collaborationConfirm: .collaborationConfirm
        case .collaborationNotice: .collaborationNotice
        case .collaborationEnd: .collaborationEnd
        case .identityUpdateProve: .identityUpdateProve
        case .collaborationReplaceIdentity: .collaborationReplaceIdentity
        }
    }

    /// The params type of each method (for the reference).
    public static func paramsType(of method: ControlMethodName) -> any ControlParams.Type {
        switch method {
        case .status, .clearHistory, .reloadContacts, .groupSessions, .identity, .collaborations, .audioDevices, .videoDevices:
            NoParams.self
        case .setAudioDevice: SetAudioDeviceParams.self
        case .setVideoSource: SetVideoSourceParams.self
        case .subscribe: SubscribeParams.self
        case .collaborationStart: CollaborationStartParams.self
        case .collaborationOpen, .collaborationChallenge, .collaborationEnd: CollaborationParams.self
        case .collaborationProve: CollaborationChallenge.self
        case .collaborationVerify: CollaborationVerifyParams.self
        case .collaborationConfirm: CollaborationConfirmParams.self
        case .collaborationNotice: CollaborationNoticeParams.self
        case .identityUpdateProve: IdentityUpdateProveParams.self
        case .collaborationReplaceIdentity: CollaborationReplaceIdentityParams.self
        case .groupActivate: GroupActivateParams.self
        case .groupJoin, .groupLeave, .groupEnd: GroupSessionParams.self
        case .groupSend: GroupSendParams.self
        case .list: ListParams.self
        case .start: StartParams.self
        case .join: JoinParams.self
        case .end, .hold, .resume, .unmerge, .mediaStats, .browserAudioEnd, .silence: ConversationParams.self
        case .browserAudio: BrowserAudioParams.self
        case .doNotDisturb: DoNotDisturbParams.self
        case .forwarding: ForwardingParams.self
        case .mute: MuteParams.self
        case .unmute: ConversationParams.self
        case .playTone: ToneParams.self
        case .video: VideoParams.self
        case .merge: MergeParams.self
        case .transfer: TransferParams.self
        case .history: HistoryParams.self
        case .historyCount: HistoryFilter.self
        case .markRead: MarkReadParams.self
        case .deleteRecord, .redial: RecordParams.self
        case .contact: ContactParams.self
        case .contacts: ContactSearchParams.self
        }
    }

    /// The command of `method` with the params found in the request `data`.
    static func decode(_ method: ControlMethodName, from data: Data) throws(ControlError) -> ControlCommand {
        switch method {
        case .status: _ = try params(NoParams.self, data); return .status
        case .list: return .list(try params(ListParams.self, data))
        case .subscribe: return .subscribe(try params(SubscribeParams.self, data))
        case .clearHistory: _ = try params(NoParams.self, data); return .clearHistory
        case .reloadContacts: _ = try params(NoParams.self, data); return .reloadContacts
        case .groupSessions: _ = try params(NoParams.self, data); return .groupSessions
        case .groupActivate: return .groupActivate(try params(GroupActivateParams.self, data))
        case .groupJoin: return .groupJoin(try params(GroupSessionParams.self, data))
        case .groupLeave: return .groupLeave(try params(GroupSessionParams.self, data))
        case .groupEnd: return .groupEnd(try params(GroupSessionParams.self, data))
        case .groupSend: return .groupSend(try params(GroupSendParams.self, data))
        case .identity: _ = try params(NoParams.self, data); return .identity
        case .collaborations: _ = try params(NoParams.self, data); return .collaborations
        case .collaborationStart: return .collaborationStart(try params(CollaborationStartParams.self, data))
        case .collaborationOpen: return .collaborationOpen(try params(CollaborationParams.self, data))
        case .collaborationChallenge: return .collaborationChallenge(try params(CollaborationParams.self, data))
        case .collaborationProve: return .collaborationProve(try params(CollaborationChallenge.self, data))
        case .collaborationVerify: return .collaborationVerify(try params(CollaborationVerifyParams.self, data))
        case .collaborationConfirm: return .collaborationConfirm(try params(CollaborationConfirmParams.self, data))
        case .collaborationNotice: return .collaborationNotice(try params(CollaborationNoticeParams.self, data))
        case .collaborationEnd: return .collaborationEnd(try params(CollaborationParams.self, data))
        case .identityUpdateProve: return .identityUpdateProve(try params(IdentityUpdateProveParams.self, data))
        case .collaborationReplaceIdentity: return .collaborationReplaceIdentity(try params(CollaborationReplaceIdentityParams.self, data))
        case .start: return .start(try params(StartParams.self, data))
        case .join: return .join(try params(JoinParams.self, data))
        case .end: return .end(try params(ConversationParams.self, data))
        case .hold: return .hold(try params(ConversationParams.self, data))
        case .resume: return .resume(try params(ConversationParams.self, data))
        case .unmerge: return .unmerge(try params(ConversationParams.self, data))
        case .mute: return .mute(try params(MuteParams.self, data))
        case .unmute: return .unmute(try params(ConversationParams.self, data))
        case .playTone: return .playTone(try params(ToneParams.self, data))
        case .video: return .video(try params(VideoParams.self, data))
        case .mediaStats: return .mediaStats(try params(ConversationParams.self, data))
        case .browserAudio: return .browserAudio(try params(BrowserAudioParams.self, data))
        case .browserAudioEnd: return .browserAudioEnd(try params(ConversationParams.self, data))
        case .silence: return .silence(try params(ConversationParams.self, data))
        case .doNotDisturb: return .doNotDisturb(try params(DoNotDisturbParams.self, data))
        case .forwarding: return .forwarding(try params(ForwardingParams.self, data))
        case .audioDevices: _ = try params(NoParams.self, data); return .audioDevices
        case .setAudioDevice: return .setAudioDevice(try params(SetAudioDeviceParams.self, data))
        case .videoDevices: _ = try params(NoParams.self, data); return .videoDevices
        case .setVideoSource: return .setVideoSource(try params(SetVideoSourceParams.self, data))
        case .merge: return .merge(try params(MergeParams.self, data))
        case .transfer: return .transfer(try params(TransferParams.self, data))
        case .history: return .history(try params(HistoryParams.self, data))
        case .historyCount: return .historyCount(try params(HistoryFilter.self, data))
        case .markRead: return .markRead(try params(MarkReadParams.self, data))
        case .deleteRecord: return .deleteRecord(try params(RecordParams.self, data))
        case .redial: return .redial(try params(RecordParams.self, data))
        case .contact: return .contact(try params(ContactParams.self, data))
        case .contacts: return .contacts(try params(ContactSearchParams.self, data))
        }
    }

    /// Writes the params object.
    public func encode(to encoder: any Encoder) throws {
        switch self {
        case .status, .clearHistory, .reloadContacts, .groupSessions, .identity, .collaborations, .audioDevices, .videoDevices:
            try NoParams().encode(to: encoder)
        case .setAudioDevice(let params): try params.encode(to: encoder)
        case .setVideoSource(let params): try params.encode(to: encoder)
        case .subscribe(let params): try params.encode(to: encoder)
        case .collaborationStart(let params): try params.encode(to: encoder)
        case .collaborationOpen(let params), .collaborationChallenge(let params), .collaborationEnd(let params): try params.encode(to: encoder)
        case .collaborationProve(let params): try params.encode(to: encoder)
        case .collaborationVerify(let params): try params.encode(to: encoder)
        case .collaborationConfirm(let params): try params.encode(to: encoder)
        case .collaborationNotice(let params): try params.encode(to: encoder)
        case .identityUpdateProve(let params): try params.encode(to: encoder)
        case .collaborationReplaceIdentity(let params): try params.encode(to: encoder)
        case .groupActivate(let params): try params.encode(to: encoder)
        case .groupJoin(let params), .groupLeave(let params), .groupEnd(let params): try params.encode(to: encoder)
        case .groupSend(let params): try params.encode(to: encoder)
        case .list(let params): try params.encode(to: encoder)
        case .start(let params): try params.encode(to: encoder)
        case .join(let params): try params.encode(to: encoder)
        case .end(let params), .hold(let params), .resume(let params), .unmerge(let params), .mediaStats(let params),
            .browserAudioEnd(let params), .silence(let params):
            try params.encode(to: encoder)
        case .mute(let params): try params.encode(to: encoder)
        case .unmute(let params): try params.encode(to: encoder)
        case .playTone(let params): try params.encode(to: encoder)
        case .video(let params): try params.encode(to: encoder)
        case .browserAudio(let params): try params.encode(to: encoder)
        case .doNotDisturb(let params): try params.encode(to: encoder)
        case .forwarding(let params): try params.encode(to: encoder)
        case .merge(let params): try params.encode(to: encoder)
        case .transfer(let params): try params.encode(to: encoder)
        case .history(let params): try params.encode(to: encoder)
        case .historyCount(let params): try params.encode(to: encoder)
        case .markRead(let params): try params.encode(to: encoder)
        case .deleteRecord(let params), .redial(let params): try params.encode(to: encoder)
        case .contact(let params): try params.encode(to: encoder)
        case .contacts(let params): try params.encode(to: encoder)
        }
    }

    /// Decodes the `params` member (an absent or null one as `{}`) and validates it; decoding errors become
    /// `invalidParams` naming the field.
    private static func params<Params: ControlParams>(_ type: Params.Type, _ data: Data) throws(ControlError) -> Params {
        let params: Params
        do {
            if let given = try ControlJSON.decoder.decode(ParamsBox<Params>.self, from: data).params {
                params = given
            } else {
                params = try ControlJSON.decoder.decode(Params.self, from: Data("{}".utf8))
            }
        } catch let error as DecodingError {
            throw invalidParams(error, fields: Params.fields, data: data)
        } catch {
            throw ControlError(.invalidParams, "The parameters could not be read.", field: "params")
        }
        try params.validate()
        return params
    }

    private struct ParamsBox<Params: Decodable>: Decodable {
        var params: Params?
    }

    /// The first documented integer parameter that holds a number with a fraction.
    private static func fractionalInteger(in data: Data, fields: [ControlField]) -> String? {
        guard let box = try? ControlJSON.decoder.decode(ParamsBox<[String: JSONValue]>.self, from: data), let params = box.params
        else { return nil }
        return fields.first { field in
            guard field.type.contains("integer"), case .number? = params[field.name] else { return false }
            return true
        }?.name
    }

    /// `Missing "to".`, `"video" must be a boolean.` The field named is always a parameter of the method (a member
    /// of `params`): a fault inside an object parameter (`media.port`) names that parameter.
    static func invalidParams(_ error: DecodingError, fields: [ControlField], data: Data) -> ControlError {
        func top(_ path: [any CodingKey]) -> String? {
            path.drop { $0.stringValue == "params" && $0.intValue == nil }.first { $0.intValue == nil }?.stringValue
        }
        func type(of field: String) -> String { fields.first { $0.name == field }?.type ?? "something else" }
        switch error {
        case .keyNotFound(let key, let context):
            guard let parent = top(context.codingPath) else {
                return ControlError(.invalidParams, "Missing \"\(key.stringValue)\".", field: key.stringValue)
            }
            return ControlError(.invalidParams, "Missing \"\(key.stringValue)\" in \"\(parent)\".", field: parent)
        case .valueNotFound(_, let context):
            let field = top(context.codingPath) ?? "params"
            return ControlError(.invalidParams, "Missing \"\(field)\".", field: field)
        case .typeMismatch(_, let context):
            let field = top(context.codingPath) ?? "params"
            return ControlError(.invalidParams, "\"\(field)\" must be \(type(of: field)).", field: field)
        case .dataCorrupted(let context):
            // Foundation reports a fraction where an integer belongs without a path: find the member.
            let field = top(context.codingPath) ?? fractionalInteger(in: data, fields: fields) ?? "params"
            return ControlError(.invalidParams, "\"\(field)\" must be \(type(of: field)).", field: field)
        @unknown default:
            return ControlError(.invalidParams, "The parameters could not be read.", field: "params")
        }
    }
}
