import ControlProtocol
import Foundation
import GroupActivities
import ParleyEngine

/// `groupSend` replies wait here for their message's report; a report that comes before its send returned (an
/// unreliable message, one with nobody to go to) waits for it instead. Both bounded.
struct GroupReplyTable {
    var waiting: [UInt64: @Sendable (GroupSendReport) -> Void] = [:]
    var early: [UInt64: GroupSendReport] = [:]
    var earlyOrder: [UInt64] = []

    /// Reports nobody waits for yet are kept this long (in count) for their send.
    static let earlyLimit = 1024
}

/// The group methods (docs/group-activities.md) and the events of group sessions.
extension ControlService {
    /// A group session, participant or collaboration id as parleyd keeps it (lower case): the reference promises
    /// that ids compare ignoring case.
    static func id(_ text: String) -> String { text.lowercased() }

    /// Whom a group message goes to, ids in parleyd's case.
    static func recipients(_ targets: GroupTargets?) -> GroupRecipients {
        switch targets {
        case .all?, nil: .all
        case .only(let ids)?: .only(Set(ids.map(id)))
        }
    }

    func serveGroup(_ command: ControlCommand, id: ControlRequestID, reply: @escaping @Sendable (Data) -> Void) throws(ControlError) {
        switch command {
        case .groupSessions:
            reply(ControlMessage.result(GroupSessionsResult(sessions: engine.groupSessions.map(GroupSessionData.init)), id: id))
        case .groupActivate(let params):
            let uuid = try conversation(params.conversation)
            let info = try Self.value(engine.activateGroupSession(params.activity, on: uuid))
            reply(ControlMessage.result(GroupSessionData(info), id: id))
        case .groupJoin(let params):
            let info = try Self.value(engine.joinGroupSession(Self.id(params.session)))
            reply(ControlMessage.result(GroupSessionData(info), id: id))
        case .groupLeave(let params), .groupEnd(let params):
            if case .groupEnd = command { try Self.value(engine.leaveGroupSession(Self.id(params.session), end: true)) } else {
                try Self.value(engine.leaveGroupSession(Self.id(params.session), end: false))
            }
            reply(ControlMessage.result(GroupLeft(session: Self.id(params.session), state: "invalidated"), id: id))
        case .groupSend(let params):
            let sendID = try Self.value(engine.sendGroupMessage(
                params.data, type: params.type, to: Self.recipients(params.to), mode: params.deliveryMode,
                keep: params.keep ?? false, in: Self.id(params.session)))
            let answer: @Sendable (GroupSendReport) -> Void = { report in
                reply(ControlMessage.result(GroupSendResult(report), id: id))
            }
            let early = groupReplies.withLock { table -> GroupSendReport? in
                if let report = table.early.removeValue(forKey: sendID) {
                    table.earlyOrder.removeAll { $0 == sendID }
                    return report
                }
                table.waiting[sendID] = answer
                return nil
            }
            if let early { answer(early) }
        default:
            preconditionFailure("not a group method: \(command.method)")
        }
    }

    /// A message's report: its `groupSend` is answered (now, or when the send returns).
    func groupSendFinished(_ report: GroupSendReport) {
        let waiting = groupReplies.withLock { table -> (@Sendable (GroupSendReport) -> Void)? in
            if let waiting = table.waiting.removeValue(forKey: report.id) { return waiting }
            table.early[report.id] = report
            table.earlyOrder.append(report.id)
            if table.earlyOrder.count > GroupReplyTable.earlyLimit { table.early[table.earlyOrder.removeFirst()] = nil }
            return nil
        }
        waiting?(report)
    }

    /// The event a group effect is, if any.
    static func groupEvent(_ effect: GroupEffect) -> ControlEventMessage? {
        switch effect {
        case .sessionOffered(let info):
            return .groupSessionChanged(GroupSessionChanged(change: "offered", session: GroupSessionData(info)))
        case .sessionChanged(let info):
            let change: String
            switch info.state {
            case .waiting: change = "offered"
            case .joined: change = info.isHost ? "activated" : "joined"
            case .invalidated: change = "invalidated"
            }
            return .groupSessionChanged(GroupSessionChanged(change: change, session: GroupSessionData(info)))
        case .participantsChanged(let session, let added, let removed, let active):
            return .groupParticipantsChanged(GroupParticipantsChanged(
                session: session, added: added.map(GroupParticipantInfo.init), removed: removed.map(GroupParticipantInfo.init),
                active: active.map(GroupParticipantInfo.init)))
        case .deliver(let delivery):
            return .groupMessage(GroupMessageReceived(delivery))
        case .sendFinished(let report):
            return .groupSendResult(GroupSendResult(report))
        case .textReceived(let leg, let text, let claimedSender):
            return .textMessage(TextMessageReceived(
                conversation: leg.uuidString, text: text, verified: claimedSender == nil, from: claimedSender))
        case .transmit, .resumeLater, .endConversation, .log:
            return nil
        }
    }

    /// The value, or the messenger's refusal as a control error.
    @discardableResult
    static func value<Value>(_ result: Result<Value, GroupSendError>) throws(ControlError) -> Value {
        switch result {
        case .success(let value): return value
        case .failure(let error): throw ControlError(group: error)
        }
    }
}
