import Foundation
import Testing

@testable import ConversationKit
@testable import ParleyDBus

/// The notifications' plan: what is posted, withdrawn and done for each call change and server answer.
@Suite("D-Bus: call notifications' plan")
struct CallNotificationPlanTests {
    let bob = Handle(kind: .generic, value: "sip:bob@example.com", displayName: "Bob")
    let me = Handle(kind: .generic, value: "sip:alice@example.com")

    func call(
        _ state: Conversation.State, ended: Conversation.EndedReason? = nil, uuid: UUID, connected: Bool = false,
        direction: Conversation.Direction = .incoming
    ) -> Conversation {
        var conversation = Conversation(uuid: uuid, direction: direction, createdAt: Date(timeIntervalSince1970: 0), capabilities: [])
        conversation.localMember = me
        conversation.members = [me, bob]
        conversation.state = state
        conversation.endedReason = ended
        if connected { conversation.connectedAt = Date(timeIntervalSince1970: 1) }
        return conversation
    }

    func posted(_ effects: [CallNotificationPlan.Effect]) -> [CallNotice] {
        effects.compactMap { if case .post(let notice, _) = $0 { notice } else { nil } }
    }

    @Test("a ringing call is posted once as call.incoming (critical, resident, Answer/Decline) and withdrawn when answered")
    func incomingThenAnswered() {
        var plan = CallNotificationPlan()
        let uuid = UUID()
        let first = plan.take(.changed(call(.ringing, uuid: uuid), name: "Bob"))
        #expect(first == [.post(CallNotificationPlan.incomingNotice("Bob"), call: uuid)])
        let notice = posted(first)[0]
        #expect(notice.category == "call.incoming" && notice.urgency == 2 && notice.resident && notice.timeout == 0)
        #expect(notice.actions == ["accept", "Answer", "decline", "Decline"])
        #expect(plan.take(.changed(call(.ringing, uuid: uuid), name: "Bob")).isEmpty)
        #expect(plan.take(.posted(call: uuid, kind: .incoming, id: 7)).isEmpty)
        #expect(plan.take(.actionInvoked(id: 7, key: "accept")) == [.answer(uuid)])
        #expect(plan.take(.changed(call(.joining, uuid: uuid), name: "Bob")) == [.withdraw(7)])
        #expect(plan.take(.changed(call(.joined, uuid: uuid, connected: true), name: "Bob")).isEmpty)
        #expect(plan.take(.actionInvoked(id: 7, key: "accept")).isEmpty)
        #expect(plan.take(.changed(call(.left, ended: .remoteEnded, uuid: uuid, connected: true), name: "Bob")).isEmpty)
    }

    @Test("a call that stops ringing before the server numbered its notice has it withdrawn as soon as the number comes")
    func withdrawnOnceNumbered() {
        var plan = CallNotificationPlan()
        let uuid = UUID()
        _ = plan.take(.changed(call(.ringing, uuid: uuid), name: "Bob"))
        #expect(plan.take(.changed(call(.joining, uuid: uuid), name: "Bob")).isEmpty)
        #expect(plan.take(.posted(call: uuid, kind: .incoming, id: 3)) == [.withdraw(3)])
        #expect(plan.take(.actionInvoked(id: 3, key: "accept")).isEmpty)
    }

    @Test("Decline declines; a key or an id that is not ours does nothing")
    func decline() {
        var plan = CallNotificationPlan()
        let uuid = UUID()
        _ = plan.take(.changed(call(.ringing, uuid: uuid), name: "Bob"))
        _ = plan.take(.posted(call: uuid, kind: .incoming, id: 11))
        #expect(plan.take(.actionInvoked(id: 12, key: "accept")).isEmpty)
        #expect(plan.take(.actionInvoked(id: 11, key: "default")).isEmpty)
        #expect(plan.take(.actionInvoked(id: 11, key: "decline")) == [.decline(uuid)])
    }

    @Test("a call the caller gave up on is withdrawn and leaves call.unanswered with Call back, which calls back once")
    func missedCallBack() {
        var plan = CallNotificationPlan()
        let uuid = UUID()
        _ = plan.take(.changed(call(.ringing, uuid: uuid), name: "Bob"))
        _ = plan.take(.posted(call: uuid, kind: .incoming, id: 4))
        let ended = plan.take(.changed(call(.left, ended: .cancelled, uuid: uuid), name: "Bob"))
        #expect(ended == [.withdraw(4), .post(CallNotificationPlan.missedNotice("Bob"), call: uuid)])
        #expect(posted(ended)[0].category == "call.unanswered" && posted(ended)[0].actions == ["callback", "Call back"])
        #expect(plan.take(.changed(call(.left, ended: .cancelled, uuid: uuid), name: "Bob")).isEmpty)
        #expect(plan.take(.posted(call: uuid, kind: .missed, id: 5)).isEmpty)
        #expect(plan.take(.actionInvoked(id: 5, key: "callback")) == [.callBack(bob)])
        #expect(plan.take(.actionInvoked(id: 5, key: "callback")).isEmpty)
    }

    @Test("no missed notice for a call declined here, answered elsewhere, answered, or placed by us; none at all for outgoing calls")
    func notMissed() {
        var plan = CallNotificationPlan()
        for (reason, connected) in [(Conversation.EndedReason.localEnded, false), (.joinedElsewhere, false), (.remoteEnded, true)] {
            let uuid = UUID()
            _ = plan.take(.changed(call(.ringing, uuid: uuid), name: "Bob"))
            _ = plan.take(.posted(call: uuid, kind: .incoming, id: 1))
            #expect(plan.take(.changed(call(.left, ended: reason, uuid: uuid, connected: connected), name: "Bob")) == [.withdraw(1)])
        }
        let outgoing = UUID()
        #expect(plan.take(.changed(call(.ringing, uuid: outgoing, direction: .outgoing), name: "Bob")).isEmpty)
        #expect(plan.take(.changed(call(.left, ended: .unanswered, uuid: outgoing, direction: .outgoing), name: "Bob")).isEmpty)
    }

    @Test("no server on the bus is said once; a call whose notice was refused or dismissed is not posted again while it rings")
    func noServerAndDismissed() {
        var plan = CallNotificationPlan()
        let (a, b) = (UUID(), UUID())
        _ = plan.take(.changed(call(.ringing, uuid: a), name: "Bob"))
        _ = plan.take(.changed(call(.ringing, uuid: b), name: "Bob"))
        #expect(plan.take(.postFailed(call: a, kind: .incoming, noServer: true, reason: "ServiceUnknown")).count == 1)
        #expect(plan.take(.postFailed(call: b, kind: .incoming, noServer: true, reason: "ServiceUnknown")).isEmpty)
        #expect(plan.take(.changed(call(.ringing, uuid: a), name: "Bob")).isEmpty)
        let c = UUID()
        _ = plan.take(.changed(call(.ringing, uuid: c), name: "Bob"))
        _ = plan.take(.posted(call: c, kind: .incoming, id: 9))
        #expect(plan.take(.closed(id: 9)).isEmpty)
        #expect(plan.take(.changed(call(.ringing, uuid: c), name: "Bob")).isEmpty)
        #expect(plan.take(.actionInvoked(id: 9, key: "accept")).isEmpty)
        #expect(plan.take(.changed(call(.joining, uuid: c), name: "Bob")).isEmpty)
    }

    @Test("at most maxMissed missed notices are remembered for Call back")
    func missedBounded() {
        var plan = CallNotificationPlan()
        for number in 0..<(CallNotificationPlan.maxMissed + 10) {
            let uuid = UUID()
            _ = plan.take(.changed(call(.left, ended: .unanswered, uuid: uuid), name: "Bob"))
            _ = plan.take(.posted(call: uuid, kind: .missed, id: UInt32(number)))
        }
        #expect(plan.take(.actionInvoked(id: 0, key: "callback")).isEmpty)
        #expect(plan.take(.actionInvoked(id: UInt32(CallNotificationPlan.maxMissed + 9), key: "callback")) == [.callBack(bob)])
    }
}
