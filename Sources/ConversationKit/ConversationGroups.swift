import Foundation

/// Conversations merged into one: Parley acts as the local focus, each conversation keeps its own session.
public struct ConversationGroup: Sendable, Hashable, Identifiable {
    /// The group's identity (made by the manager at the merge that formed it).
    public let uuid: UUID
    /// The conversations in the group, in the order they joined it.
    public let conversationUUIDs: [UUID]
    /// The union of the conversations' members.
    public let members: Set<Handle>
    /// The union of the conversations' active remote members.
    public let activeRemoteMembers: Set<Handle>
    /// The group's identifier.
    public var id: UUID { uuid }
}

/// Which conversation is in which group, and the merge/unmerge rules with their limits. A pure value.
struct GroupTable: Sendable, Hashable {
    private(set) var groups: [UUID: [UUID]] = [:]
    private(set) var groupOf: [UUID: UUID] = [:]
    /// Group uuids in creation order (for stable listing).
    private(set) var order: [UUID] = []

    struct Limits: Hashable {
        let maximumGroups: Int
        let maximumPerGroup: Int
    }

    /// Merges `a` with `b` (or with the group either belongs to). Returns the conversations whose group changed.
    @discardableResult
    mutating func merge(
        _ a: UUID, with b: UUID, limits: Limits, newGroupUUID: () -> UUID
    ) throws(ConversationManagerError) -> [UUID] {
        guard a != b else { throw .cannotMergeWithItself(a) }
        let groupA = groupOf[a], groupB = groupOf[b]
        if let groupA, groupA == groupB { throw .alreadyInSameGroup(a, b) }
        let membersA = groupA.map { groups[$0]! } ?? [a]
        let membersB = groupB.map { groups[$0]! } ?? [b]
        let combined = membersB + membersA
        guard combined.count <= limits.maximumPerGroup else {
            throw .maximumConversationsPerGroupReached(limit: limits.maximumPerGroup)
        }
        switch (groupA, groupB) {
        case (nil, nil):
            guard groups.count < limits.maximumGroups else {
                throw .maximumConversationGroupsReached(limit: limits.maximumGroups)
            }
            let group = newGroupUUID()
            groups[group] = combined
            order.append(group)
            for member in combined { groupOf[member] = group }
            return combined
        case (let existing?, nil), (nil, let existing?):
            let newcomer = groupA == nil ? a : b
            groups[existing]!.append(newcomer)
            groupOf[newcomer] = existing
            return [newcomer]
        case (let first?, let second?):
            // Two groups become one: the second (b's) absorbs the first (a's).
            groups[second]!.append(contentsOf: membersA)
            for member in membersA { groupOf[member] = second }
            groups[first] = nil
            order.removeAll { $0 == first }
            return membersA
        }
    }

    /// Takes `a` out of its group; a group left with one conversation dissolves. Returns who changed group.
    @discardableResult
    mutating func unmerge(_ a: UUID) throws(ConversationManagerError) -> [UUID] {
        guard groupOf[a] != nil else { throw .notInGroup(a) }
        return remove(a)
    }

    /// Removes `a` from any group (it ended); a group of one dissolves. Returns who changed group.
    @discardableResult
    mutating func remove(_ a: UUID) -> [UUID] {
        guard let group = groupOf[a] else { return [] }
        groupOf[a] = nil
        groups[group]!.removeAll { $0 == a }
        var changed = [a]
        if groups[group]!.count < 2 {
            for member in groups[group]! {
                groupOf[member] = nil
                changed.append(member)
            }
            groups[group] = nil
            order.removeAll { $0 == group }
        }
        return changed
    }
}
