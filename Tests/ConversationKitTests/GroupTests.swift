import ConversationKit
import Foundation
import Testing

/// Merge and unmerge within the configured limits.
@Suite("Conversation groups")
struct GroupTests {
    func groupSets(_ manager: ConversationManager) -> Set<Set<UUID>> {
        Set(manager.groups.map { Set($0.conversationUUIDs) })
    }

    @Test("merge of three, then unmerge one; membership is the union")
    func mergeOfThree() throws {
        let h = try Harness()
        try h.answered(h.A, from: h.alice)
        try h.answered(h.B, from: h.bob)
        try h.answered(h.C, from: h.carol)
        _ = h.delegate.take()
        let mergeAB = ConversationAction.merge(conversationUUID: h.A, with: h.B)
        try h.manager.perform([mergeAB])
        #expect(h.manager.groups.isEmpty, "groups change when the merge is fulfilled")
        #expect(mergeAB.fulfill())
        #expect(groupSets(h.manager) == [[h.A, h.B]])
        let group = try #require(h.manager.groups.first)
        #expect(h.manager.conversation(h.A)?.groupUUID == group.uuid)
        #expect(h.manager.conversation(h.B)?.groupUUID == group.uuid)
        #expect(group.members == [h.alice, h.bob])
        #expect(group.activeRemoteMembers == [h.alice, h.bob])

        try h.performAndFulfil(.merge(conversationUUID: h.C, with: h.A))
        #expect(groupSets(h.manager) == [[h.A, h.B, h.C]])
        #expect(h.manager.groups.first?.uuid == group.uuid, "joining an existing group keeps its identity")
        #expect(h.manager.groups.first?.members == [h.alice, h.bob, h.carol])

        try h.performAndFulfil(.unmerge(conversationUUID: h.B))
        #expect(groupSets(h.manager) == [[h.A, h.C]])
        #expect(h.manager.conversation(h.B)?.groupUUID == nil)
        #expect(h.manager.conversations.allSatisfy { $0.state == .joined }, "merging never changes states")
        #expect(h.delegate.take() == [
            "perform merge A", "changed A joined", "changed B joined",
            "perform merge C", "changed C joined",
            "perform unmerge B", "changed B joined",
        ])
    }

    @Test("a group of two dissolves on unmerge and when one conversation ends")
    func dissolve() throws {
        let h = try Harness()
        try h.answered(h.A)
        try h.answered(h.B)
        try h.performAndFulfil(.merge(conversationUUID: h.A, with: h.B))
        try h.performAndFulfil(.unmerge(conversationUUID: h.A))
        #expect(h.manager.groups.isEmpty)
        #expect(h.manager.conversation(h.B)?.groupUUID == nil)
        #expect(managerError { try h.manager.perform([.unmerge(conversationUUID: h.A)]) } == .notInGroup(h.A))

        try h.performAndFulfil(.merge(conversationUUID: h.A, with: h.B))
        let groupUUID = try #require(h.manager.groups.first?.uuid)
        try h.manager.reportConversationEvent(.ended(h.clock.now(), .remoteEnded), for: h.A)
        #expect(h.manager.groups.isEmpty)
        #expect(h.manager.conversation(h.B)?.groupUUID == nil)
        #expect(h.delegate.last(h.A)?.groupUUID == groupUUID, "the ended conversation remembers its group for history")
    }

    @Test("limits: groups and conversations per group")
    func limits() throws {
        let h = try Harness(.init(maximumConversationGroups: 1, maximumConversationsPerConversationGroup: 2))
        for uuid in [h.A, h.B, h.C, h.D] { try h.answered(uuid) }
        try h.performAndFulfil(.merge(conversationUUID: h.A, with: h.B))
        #expect(managerError { try h.manager.perform([.merge(conversationUUID: h.C, with: h.D)]) }
            == .maximumConversationGroupsReached(limit: 1))
        #expect(managerError { try h.manager.perform([.merge(conversationUUID: h.C, with: h.A)]) }
            == .maximumConversationsPerGroupReached(limit: 2))
        #expect(managerError { try h.manager.perform([.merge(conversationUUID: h.A, with: h.B)]) }
            == .alreadyInSameGroup(h.A, h.B))
        #expect(managerError { try h.manager.perform([.merge(conversationUUID: h.A, with: h.A)]) }
            == .cannotMergeWithItself(h.A))
        #expect(groupSets(h.manager) == [[h.A, h.B]])
    }

    @Test("pending merges count against the limits")
    func pendingMergesCount() throws {
        let h = try Harness(.init(maximumConversationGroups: 1))
        for uuid in [h.A, h.B, h.C, h.D] { try h.answered(uuid) }
        let first = ConversationAction.merge(conversationUUID: h.A, with: h.B)
        try h.manager.perform([first])
        #expect(managerError { try h.manager.perform([.merge(conversationUUID: h.C, with: h.D)]) }
            == .maximumConversationGroupsReached(limit: 1))
        #expect(managerError {
            try h.manager.perform([.merge(conversationUUID: h.C, with: h.D), .merge(conversationUUID: h.D, with: h.A)])
        } == .maximumConversationGroupsReached(limit: 1))
        #expect(first.fail(reason: "focus unavailable"))
        try h.performAndFulfil(.merge(conversationUUID: h.C, with: h.D))
        #expect(groupSets(h.manager) == [[h.C, h.D]])
    }

    @Test("a merge whose partner ends fails at once and stops counting against the limits")
    func partnerEnded() throws {
        let h = try Harness(.init(maximumConversationGroups: 1))
        for uuid in [h.A, h.B, h.C, h.D] { try h.answered(uuid) }
        let merge = ConversationAction.merge(conversationUUID: h.A, with: h.B)
        try h.manager.perform([merge])
        try h.manager.reportConversationEvent(.ended(h.clock.now(), .remoteEnded), for: h.B)
        guard case .failed(let reason) = merge.state else {
            Issue.record("expected failed, got \(merge.state)")
            return
        }
        #expect(reason.contains("ended before the merge completed"))
        #expect(!merge.fulfill(), "a late fulfill does not count")
        #expect(h.manager.pendingActions.isEmpty)
        try h.performAndFulfil(.merge(conversationUUID: h.C, with: h.D))
        #expect(groupSets(h.manager) == [[h.C, h.D]])
    }

    @Test("limits do not count on pending unmerges; an unmerge whose group dissolved meanwhile completes")
    func pendingUnmerges() throws {
        let h = try Harness(.init(maximumConversationGroups: 1))
        for uuid in [h.A, h.B, h.C, h.D] { try h.answered(uuid) }
        try h.performAndFulfil(.merge(conversationUUID: h.A, with: h.B))
        let unmerge = ConversationAction.unmerge(conversationUUID: h.A)
        try h.manager.perform([unmerge])
        #expect(managerError { try h.manager.perform([.merge(conversationUUID: h.C, with: h.D)]) }
            == .maximumConversationGroupsReached(limit: 1), "the pending unmerge may still fail")
        try h.manager.reportConversationEvent(.ended(h.clock.now(), .remoteEnded), for: h.B)
        #expect(h.manager.groups.isEmpty)
        #expect(unmerge.fulfill(), "A is out of a group: the unmerge reached its goal")
        #expect(unmerge.state == .complete)
        try h.performAndFulfil(.merge(conversationUUID: h.C, with: h.D))
    }

    @Test("only joined or paused conversations merge")
    func mergeNeedsMedia() throws {
        let h = try Harness()
        try h.answered(h.A)
        try h.ring(h.B)
        #expect(managerError { try h.manager.perform([.merge(conversationUUID: h.A, with: h.B)]) }?.code
            == "illegalTransition")
        #expect(managerError { try h.manager.perform([.merge(conversationUUID: h.B, with: h.A)]) }?.code
            == "illegalTransition")
    }
}
