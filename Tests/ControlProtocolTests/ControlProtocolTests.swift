import Collaboration
import ControlProtocol
import ConversationKit
import Foundation
import GroupActivities
import Testing

@Suite("Control protocol: the typed messages")
struct ControlProtocolTests {
    /// Every method's documented example, as a command.
    static func exampleCommand(_ method: ControlMethodName) -> ControlCommand {
        switch method {
        case .status: .status
        case .list: .list(.example)
        case .subscribe: .subscribe(.example)
        case .clearHistory: .clearHistory
        case .reloadContacts: .reloadContacts
        case .start: .start(.example)
        case .join: .join(.example)
        case .end: .end(.example)
        case .hold: .hold(.example)
        case .resume: .resume(.example)
        case .unmerge: .unmerge(.example)
        case .mute: .mute(.example)
        case .unmute: .unmute(.example)
        case .playTone: .playTone(.example)
        case .video: .video(.example)
        case .mediaStats: .mediaStats(.example)
        case .browserAudio: .browserAudio(.example)
        case .browserAudioEnd: .browserAudioEnd(.example)
        case .doNotDisturb: .doNotDisturb(.example)
        case .forwarding: .forwarding(.example)
        case .audioDevices: .audioDevices
        case .setAudioDevice: .setAudioDevice(.example)
        case .videoDevices: .videoDevices
        case .setVideoSource: .setVideoSource(.example)
        case .silence: .silence(.example)
        case .merge: .merge(.example)
        case .transfer: .transfer(.example)
        case .history: .history(.example)
        case .historyCount: .historyCount(.example)
        case .markRead: .markRead(.example)
        case .deleteRecord: .deleteRecord(.example)
        case .redial: .redial(.example)
        case .contact: .contact(.example)
        case .contacts: .contacts(.example)
        case .groupSessions: .groupSessions
        case .groupActivate: .groupActivate(.example)
        case .groupJoin: .groupJoin(.example)
        case .groupLeave: .groupLeave(.example)
        case .groupEnd: .groupEnd(.example)
        case .groupSend: .groupSend(.example)
        case .identity: .identity
        case .collaborations: .collaborations
        case .collaborationStart: .collaborationStart(.example)
        case .collaborationOpen: .collaborationOpen(.example)
        case .collaborationChallenge: .collaborationChallenge(.example)
        case .collaborationProve: .collaborationProve(.example)
        case .collaborationVerify: .collaborationVerify(.example)
        case .collaborationConfirm: .collaborationConfirm(.example)
        case .collaborationNotice: .collaborationNotice(.example)
        case .collaborationEnd: .collaborationEnd(.example)
        case .identityUpdateProve: .identityUpdateProve(.example)
        case .collaborationReplaceIdentity: .collaborationReplaceIdentity(.example)
        }
    }

    @Test("every request round-trips: encoded, parsed back, equal; its members are the documented ones", arguments: ControlMethodName.allCases)
    func requestsRoundTrip(_ method: ControlMethodName) throws {
        let request = ControlRequest(id: .string("r-\(method.rawValue)"), command: Self.exampleCommand(method))
        let line = request.encoded()
        let parsed = try ControlRequest.parse(line)
        #expect(parsed == request)
        #expect(parsed.command.method == method)
        let object = try #require(try JSONSerialization.jsonObject(with: line) as? [String: Any])
        let params = try #require(object["params"] as? [String: Any])
        let documented = Set(ControlCommand.paramsType(of: method).fields.map(\.name))
        #expect(Set(params.keys).isSubset(of: documented), "\(method): \(params.keys.sorted()) vs \(documented.sorted())")
    }

    @Test("unknown members are ignored; a missing required one is invalidParams naming it")
    func unknownAndMissing() throws {
        let newer = #"{"v":1,"id":1,"method":"merge","params":{"conversation":"a","with":"b","priority":9},"hint":"x"}"#
        #expect(try ControlRequest.parse(Data(newer.utf8)).command == .merge(MergeParams(conversation: "a", with: "b")))
        for (method, missing) in [("merge", "with"), ("playTone", "digits"), ("contact", "handle"), ("deleteRecord", "id")] {
            let params = method == "merge" ? #"{"conversation":"a"}"# : method == "playTone" ? #"{"conversation":"a"}"# : "{}"
            let line = #"{"v":1,"id":2,"method":"\#(method)","params":\#(params)}"#
            do {
                _ = try ControlRequest.parse(Data(line.utf8))
                Issue.record("\(method) without \(missing) parsed")
            } catch {
                #expect(error.id == .number(2))
                #expect(error.error.code == .invalidParams && error.error.details?.field == missing, "\(error.error)")
                #expect(error.error.message == "Missing \"\(missing)\".")
            }
        }
        let absent = try ControlRequest.parse(Data(#"{"v":1,"id":3,"method":"history"}"#.utf8))
        #expect(absent.command == .history(HistoryParams()), "absent params are {}")
    }

    @Test("invalidParams names the method's parameter: a fraction where an integer belongs, a fault inside an object, null group data, a blank handle")
    func invalidParamsNameTheParameter() throws {
        let cases: [(String, String, String)] = [
            (#"{"v":1,"id":1,"method":"list","params":{"limit":2.5}}"#, "limit", "\"limit\" must be an integer from 1 to 200."),
            (#"{"v":1,"id":1,"method":"start","params":{"to":"sip:b@h","media":{"address":"127.0.0.1"}}}"#, "media", "Missing \"port\" in \"media\"."),
            (#"{"v":1,"id":1,"method":"groupSend","params":{"session":"s","type":"t","data":null}}"#, "data", "\"data\" may be any JSON value but null."),
            (#"{"v":1,"id":1,"method":"contact","params":{"handle":" "}}"#, "handle", "Say which one (\"handle\" is empty)."),
            (#"{"v":1,"id":1,"method":"collaborationNotice","params":{"collaboration":"c","kind":"change"}}"#, "trigger", "A change notice needs a \"trigger\"."),
            (#"{"v":1,"id":1,"method":"setVideoSource","params":{"conversation":"1b","source":"camera:"}}"#, "source",
             "source must be camera, camera:ID (from videoDevices), test:PATTERN or file:PATH (or null for parleyd's)."),
            (#"{"v":1,"id":1,"method":"setVideoSource","params":{"conversation":"1b","source":"rtsp://cam"}}"#, "source",
             "source must be camera, camera:ID (from videoDevices), test:PATTERN or file:PATH (or null for parleyd's)."),
        ]
        for (line, field, message) in cases {
            do {
                _ = try ControlRequest.parse(Data(line.utf8))
                Issue.record("\(line) parsed")
            } catch {
                #expect(error.error.code == .invalidParams && error.error.details?.field == field, "\(line): \(error.error)")
                #expect(error.error.message == message, "\(line)")
            }
        }
    }

    @Test("ids: integers and short strings; anything else cannot be answered by id")
    func ids() throws {
        #expect(try ControlRequest.parse(Data(#"{"v":1,"id":-5,"method":"list"}"#.utf8)).id == .number(-5))
        let long = String(repeating: "x", count: ControlProtocol.maxIDBytes + 1)
        for bad in [#""""#, "\"\(long)\"", "1.5", "true", "null"] {
            do {
                _ = try ControlRequest.parse(Data(#"{"v":1,"id":\#(bad),"method":"list"}"#.utf8))
                Issue.record("id \(bad) accepted")
            } catch {
                #expect(error.id == nil && error.error.code == .invalidRequest, "\(bad): \(error.error)")
            }
        }
    }

    @Test("responses and every event round-trip through their decoders; optional members are written as null")
    func responsesAndEvents() throws {
        let error = ControlError(.failed, "The line is busy.", details: .init(sipStatus: 486, sipReason: "Busy Here", action: "start"))
        let line = ControlMessage.error(error, id: .number(4))
        let decoded = try ControlMessage.response(line, as: ListResult.self)
        #expect(decoded.id == .number(4))
        guard case .error(let back) = decoded.response else {
            Issue.record("not an error: \(decoded)")
            return
        }
        #expect(back == error)
        let anonymous = String(decoding: ControlMessage.error(error, id: nil), as: UTF8.self)
        #expect(anonymous.contains(#""id":null"#))

        let record = HistoryRecordInfo(
            id: 1, uuid: "U", direction: "incoming", status: "missed", endedReason: "unanswered", displayName: "Alice",
            members: [], localMember: nil, isVideo: false, group: nil, callID: nil, createdAt: "2026-12-01T12:00:00.000Z",
            connectedAt: nil, endedAt: "2026-12-01T12:01:00.000Z", durationMs: 0, isRead: false)
        let page = String(decoding: ControlMessage.result(HistoryResult(records: [record], nextCursor: nil), id: .number(5)), as: UTF8.self)
        for member in HistoryRecordInfo.fields.map(\.name) { #expect(page.contains("\"\(member)\":"), "\(member) missing: \(page)") }
        #expect(page.contains(#""nextCursor":null"#) && page.contains(#""connectedAt":null"#))

        let events: [ControlEventMessage] = [
            .tonesReceived(TonesReceived(conversation: "U", digits: "5#")),
            .mediaChanged(MediaChanged(conversation: "U", media: nil)),
            .mediaStats(MediaStats(conversation: "U", stats: MediaStatsInfo(
                codec: "PCMU", packetsSent: 150, packetsReceived: 148, packetsLost: 2, lossPercent: 1.33, jitterMs: 4,
                peerPacketsLost: nil, peerJitterMs: nil, roundTripMs: nil))),
            .mediaChanged(MediaChanged(conversation: "U", media: MediaInfo(
                localAddress: "127.0.0.1", localPort: 40_000, remoteAddress: "::1", remotePort: 6000, remoteRTCPPort: nil,
                codec: "PCMA", payloadType: 8, clockRate: 8000, sends: true, receives: false, ptime: nil,
                telephoneEvent: 101, receivedTelephoneEvent: nil))),
            .historyChanged(HistoryChanged(change: "read", records: [1, 2])),
            .audioLevels(AudioLevelsEvent(conversation: "U", heard: nil, said: 127)),
            .registrationChanged(RegistrationInfo(state: "failed", reason: "403 Forbidden")),
            .pushReceived(PushReceived(callID: "c@h", handling: "cancelled", conversation: nil, reason: nil)),
            .actionSettled(ActionSettled(action: "start", actionUUID: "A", conversation: "U", state: "failed", error: error)),
            .browserAudioChanged(BrowserAudioChanged(conversation: "U", session: "s1", state: "ended", reason: nil)),
            .doNotDisturbChanged(DoNotDisturbState(enabled: true)),
            .audioRouteChanged(AudioRouteChanged(conversation: nil, source: nil, sink: "s", reason: "r")),
            .transferProgress(TransferProgress(conversation: "U", role: "transferor", status: 180, reason: "Ringing", final: false)),
        ] + Self.groupEvents + Self.collaborationEvents
        for event in events { #expect(ControlEventMessage.decode(event.encoded()) == event, "\(event)") }
        let media = String(decoding: events[3].encoded(), as: UTF8.self)
        for member in MediaInfo.fields.map(\.name) { #expect(media.contains("\"\(member)\":"), "\(member) missing: \(media)") }
        #expect(media.contains(#""direction":"sendonly""#) && media.contains(#""remoteRTCPPort":6001"#))
        #expect(media.contains(#""ptime":null"#))
        #expect(Set(events.map(\.name) + [.conversationChanged]) == Set(ControlEventMessage.Name.allCases))
    }

    /// One of each collaboration event.
    static var collaborationEvents: [ControlEventMessage] {
        let root = PersonIdentity(rootHash: Array(repeating: 0xAB, count: 32))!
        let highlight = CollaborationHighlight(identifier: "c1", url: "parley://collaboration/c1", title: "Trip plan", session: "s1")
        let info = CollaborationInfo(
            highlight: highlight, metadata: CollaborationMetadata(localIdentifier: "d", collaborationIdentifier: "c1", title: "Trip plan"),
            isOwner: true, state: .active, verifier: "sip:alice@127.0.0.1", access: .rejected(.revoked),
            participants: [CollaborationParticipant(identity: root, access: .granted, participant: "b", name: "Bob")])
        var coordinator = CollaborationCoordinator()
        let action = coordinator.submit(
            .updateParticipants(collaboration: "c1", added: [root], removed: []), id: "action-1", requiresConfirmation: true,
            now: Date(timeIntervalSince1970: 1_796_119_200))
        return [
            .collaborationChanged(CollaborationChanged(collaboration: CollaborationData(info))),
            .collaborationParticipantsUpdate(CollaborationUpdateEvent(action)),
            .collaborationActionCompleted(CollaborationActionCompleted(action, .timedOut)),
            .collaborationVerified(CollaborationVerified(collaboration: "c1", participant: nil, result: .failure(.nonceReused))),
            .collaborationVerified(CollaborationVerified(collaboration: "c1", participant: "b", result: .success(root))),
            .collaborationNotice(CollaborationNoticeEvent(CollaborationNotice(highlight: highlight, event: .mention(root), from: "h", fromName: "Alice"))),
            .identityAnnounced(IdentityAnnounced(session: "s1", participant: "b", name: "Bob", root: root.hex)),
        ]
    }

    /// One of each group event, with every optional member both ways.
    static var groupEvents: [ControlEventMessage] {
        let host = GroupParticipant(id: "h", name: "Alice"), bob = GroupParticipant(id: "b", name: "Bob")
        let info = GroupSessionInfo(
            id: "S", activity: GroupActivity(identifier: "com.example.list", title: "List"), state: .invalidated(.ended),
            isHost: false, conversation: UUID(), localParticipant: bob, activeParticipants: [host, bob], maxMessageBytes: 768)
        let delivery = GroupDelivery(
            session: "S", seq: 7, source: host, type: "app.item", data: .object(["n": .integer(1), "x": .number(0.5), "ok": .bool(true), "l": .array([.null, .string("é")])]),
            mode: .reliable)
        return [
            .groupSessionChanged(GroupSessionChanged(change: "invalidated", session: GroupSessionData(info))),
            .groupParticipantsChanged(GroupParticipantsChanged(session: "S", added: [.init(bob)], removed: [], active: [.init(host), .init(bob)])),
            .groupMessage(GroupMessageReceived(delivery)),
            .groupSendResult(GroupSendResult(GroupSendReport(
                id: 3, session: "S", seq: nil, deliveredTo: [], failed: [], unsupported: [], error: .throttled(retryAfter: .milliseconds(50))))),
            .groupSendResult(GroupSendResult(GroupSendReport(
                id: 4, session: "S", seq: 9, deliveredTo: ["h"], failed: ["c"], unsupported: ["p"], error: nil))),
            .textMessage(TextMessageReceived(conversation: "U", text: "hi")),
        ]
    }

    @Test("a group message's params: data any JSON, to all or some, a known mode; bad ones named")
    func groupSendParams() throws {
        let line = #"{"v":1,"id":1,"method":"groupSend","params":{"session":"S","type":"text","data":"hi","to":["a","b"]}}"#
        let parsed = try ControlRequest.parse(Data(line.utf8))
        #expect(parsed.command == .groupSend(GroupSendParams(session: "S", type: "text", data: .string("hi"), to: .only(["a", "b"]))))
        for (params, field) in [(#"{"session":"S","type":"t","data":1,"mode":"sometimes"}"#, "mode"), (#"{"session":"S","type":"t"}"#, "data"),
                                (#"{"session":"S","type":"t","data":1,"to":"some"}"#, "to"), (#"{"session":" ","type":"t","data":1}"#, "session")] {
            do {
                _ = try ControlRequest.parse(Data(#"{"v":1,"id":2,"method":"groupSend","params":\#(params)}"#.utf8))
                Issue.record("\(params) parsed")
            } catch {
                #expect(error.error.details?.field == field, "\(params): \(error.error)")
            }
        }
        let activate = #"{"v":1,"id":3,"method":"groupActivate","params":{"conversation":"c","identifier":"","title":"T"}}"#
        #expect(throws: (any Error).self) { try ControlRequest.parse(Data(activate.utf8)) }
    }

    @Test("a conversation's view: every documented member present, null when empty; changes name what differs")
    func conversationView() throws {
        let manager = try ConversationManager(configuration: .init())
        let uuid = UUID()
        let alice = Handle(kind: .phoneNumber, value: "sip:+14155550100@127.0.0.1", displayName: "sipp")
        try manager.reportNewIncomingConversation(uuid: uuid, update: .init(members: [alice], activeRemoteMembers: [alice]))
        let conversation = try #require(manager.conversation(uuid))
        let view = ConversationInfo(conversation, callID: nil, pendingActions: []) { _ in "Alice Liddell" }
        #expect(view.displayName == "Alice Liddell" && view.members.first?.displayName == "sipp")
        let text = String(decoding: try JSONEncoder().encode(view), as: UTF8.self)
        for member in ConversationInfo.fields.map(\.name) { #expect(text.contains("\"\(member)\":"), "\(member): \(text)") }
        #expect(text.contains(#""callID":null"#) && text.contains(#""group":null"#))
        #expect(view.changes(since: nil) == ["new"])
        var muted = view
        muted.isMuted = true
        muted.pendingActions = ["mute"]
        #expect(muted.changes(since: view) == ["isMuted", "pendingActions"])
        #expect(view.changes(since: view).isEmpty)
        #expect(ControlTime.date(view.createdAt) != nil, "timestamps parse back: \(view.createdAt)")
    }

    @Test("the hand-written JSON of conversations is byte for byte what JSONEncoder writes, odd strings included")
    func fastJSONMatchesFoundation() throws {
        struct Envelope<Result: Encodable>: Encodable {
            let v: Int
            let id: ControlRequestID
            let result: Result
        }
        let manager = try ConversationManager(configuration: .init())
        let odd = Handle(kind: .generic, value: "sip:a/b@h", displayName: "Quote \" back \\ tab \t nl \n bell \u{07} é 🎉")
        let plain = Handle(kind: .phoneNumber, value: "+14155550100")
        let uuid = UUID()
        try manager.reportNewIncomingConversation(uuid: uuid, update: .init(members: [odd, plain], activeRemoteMembers: [odd]))
        let conversation = try #require(manager.conversation(uuid))
        let views = [
            ConversationInfo(conversation, callID: "c@h", pendingActions: ["join"], finalStatus: (486, "Busy"), contactName: { _ in nil }),
            ConversationInfo(conversation, callID: nil, pendingActions: [], contactName: { $0 == plain ? "Alice" : nil }),
        ]
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let list = ListResult(conversations: views)
        #expect(String(decoding: ControlMessage.result(list, id: .number(3)), as: UTF8.self)
            == String(decoding: try encoder.encode(Envelope(v: 1, id: .number(3), result: list)), as: UTF8.self))
        let action = ActionResult(action: "hold", actionUUID: "A", state: "complete", conversation: views[1])
        #expect(String(decoding: ControlMessage.result(action, id: .string("x\"y")), as: UTF8.self)
            == String(decoding: try encoder.encode(Envelope(v: 1, id: .string("x\"y"), result: action)), as: UTF8.self))
        let change = ControlEventMessage.conversationChanged(ConversationChanged(conversation: views[0], from: nil, changes: ["new"]))
        #expect(ControlEventMessage.decode(change.encoded()) == change)
    }
}
