import ConversationKit
import Foundation
import Media
import ParleyEngine

/// What the node knows of its merged calls: each live conversation's group and whether it is in the mix.
///
/// ```
///   a conversation merged (groupUUID set), joined, its audio both ways ──► in its group's mix: its call is tapped
///        (a new pipeline with the bridge's elements) and the group's bridge mixes it with the others
///   held by us (paused), or holding us (its audio one way only) ──► out of the mix, still tapped
///   unmerged, or ended ──► out of the mix; an unmerged call's pipeline goes back to two-party audio
///   a group with fewer than two in the mix ──► its bridge idles (no tick)
/// ```
struct ConferenceMembership {
    /// Each live conversation's group (merged ones only) and whether the user holds it.
    var groups: [UUID: UUID] = [:]
    var paused: Set<UUID> = []
    /// Calls whose audio goes both ways now (a peer that holds us sends nothing, and takes nothing).
    var bothWays: Set<UUID> = []
    /// The calls tapped by a bridge now.
    var tapped: Set<UUID> = []
    /// Each group's bridge.
    var bridges: [UUID: ConferenceBridge] = [:]

    /// The members of each group that are in its mix now.
    func mixes(among sessions: Set<UUID>) -> [UUID: Set<UUID>] {
        var mixes: [UUID: Set<UUID>] = [:]
        for (conversation, group) in groups where sessions.contains(conversation) {
            mixes[group, default: []].formUnion(
                !paused.contains(conversation) && bothWays.contains(conversation) ? [conversation] : [])
        }
        return mixes
    }
}

extension CallAudio {
    /// A conversation changed (its state, its group): the mixes follow.
    func conversationChanged(_ conversation: Conversation) {
        let id = conversation.uuid
        if conversation.state == .left || conversation.groupUUID == nil {
            conference.groups[id] = nil
        } else {
            conference.groups[id] = conversation.groupUUID
        }
        if conversation.state == .paused { conference.paused.insert(id) } else { conference.paused.remove(id) }
        if conversation.state == .left { conference.bothWays.remove(id) }
        remix()
    }

    /// The call's negotiated audio changed: whether it goes both ways (the peer's hold takes it out of the mix).
    func noteDirection(_ audio: NegotiatedAudio?, for conversation: UUID) {
        let both = audio.map { $0.sends && $0.receives } ?? false
        guard both != conference.bothWays.contains(conversation) else { return }
        if both { conference.bothWays.insert(conversation) } else { conference.bothWays.remove(conversation) }
        remix()
    }

    /// Taps the calls of every group (a merged call keeps its tap while it is held), untaps those no longer merged,
    /// and gives each bridge the members in its mix.
    func remix() {
        let merged = Set(conference.groups.keys).intersection(sessions.keys)
        for conversation in merged.subtracting(conference.tapped) {
            sessions[conversation]?.setBridged(true)
            log.info("\(conversation): merged: its audio goes through the conference bridge")
        }
        for conversation in conference.tapped.subtracting(merged) {
            sessions[conversation]?.setBridged(false)
            if sessions[conversation] != nil { log.info("\(conversation): unmerged: two-party audio again") }
        }
        conference.tapped = merged
        let mixes = conference.mixes(among: Set(sessions.keys))
        for (group, bridge) in conference.bridges where mixes[group] == nil {
            bridge.finish { [log] path in if let path { log.info("group \(group): recording complete: \(path)") } }
            conference.bridges[group] = nil
        }
        for (group, members) in mixes {
            let bridge = conference.bridges[group] ?? makeBridge(for: group)
            conference.bridges[group] = bridge
            var taps: [UUID: BridgeTap] = [:]
            for member in members { taps[member] = sessions[member]?.bridgeTap }
            bridge.set(members: taps)
        }
    }

    /// A group's bridge; with a file sink, recording what the local user hears of the group (`group-UUID.wav`).
    private func makeBridge(for group: UUID) -> ConferenceBridge {
        guard case .files(let directory) = configuration.sink else { return ConferenceBridge() }
        let path = URL(fileURLWithPath: directory).appendingPathComponent("group-\(group.uuidString).wav").path
        log.info("group \(group): recording what you hear of it to \(path)")
        return ConferenceBridge(recordingPath: path, maxRecording: configuration.maxRecording) { [log] failure in log.error("group \(group): \(failure)") }
    }
}
