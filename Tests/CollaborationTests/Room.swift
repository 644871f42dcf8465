import Collaboration
import Foundation
import GroupActivities
import ParleyEngine
import ParleyIO

/// Centers of several nodes in one group session, their group messages carried in order, synchronously: what
/// the messenger guarantees, without it.
struct Room {
    var centers: [String: CollaborationCenter] = [:]
    var keys: [String: DeviceKey] = [:]
    var effects: [String: [CollaborationEffect]] = [:]
    var now = Date(timeIntervalSince1970: 1_796_119_200)
    let session = "session-1"
    var members: [String] = []
    /// Each node's own handler fulfils participants updates unless this holds (a frontend confirms).
    var autoFulfil = true

    init(_ names: [String], confirm: Bool = false) {
        for name in names {
            let key = DeviceKey.generate()
            keys[name] = key
            centers[name] = CollaborationCenter(signer: key, verifier: "sip:\(name)@127.0.0.1", crypto: crypto, actionTimeout: 10)
        }
        for name in names { join(name) }
    }

    func participant(_ name: String) -> GroupParticipant { GroupParticipant(id: name, name: name.capitalized) }

    /// As the messenger does it: the host's roster reaches the members before anything the newcomer sends.
    mutating func join(_ name: String) {
        let others = members.map(participant)
        var told: [(String, [CollaborationEffect])] = []
        for other in members { told.append((other, centers[other]!.participantsChanged(session, added: [participant(name)], removed: [], now: now))) }
        let joined = centers[name]!.sessionJoined(session, local: participant(name), active: others + [participant(name)])
        members.append(name)
        for (other, effects) in told { apply(other, effects) }
        apply(name, joined)
    }

    mutating func remove(_ name: String) {
        members.removeAll { $0 == name }
        apply(name, centers[name]!.sessionEnded(session))
        for other in members { apply(other, centers[other]!.participantsChanged(session, added: [], removed: [participant(name)], now: now)) }
    }

    mutating func apply(_ node: String, _ produced: [CollaborationEffect]) {
        for effect in produced {
            effects[node, default: []].append(effect)
            switch effect {
            case .send(let session, let type, let data, let to, _):
                let recipients = members.filter { $0 != node && (to == nil || to!.contains($0)) }
                for recipient in recipients {
                    let delivery = GroupDelivery(session: session, seq: 0, source: participant(node), type: type, data: data, mode: .reliable)
                    apply(recipient, centers[recipient]!.received(delivery, now: now))
                }
            case .handle(let action):
                // Start actions are fulfilled by `start(_:)` below; updates by this node's handler unless confirmed.
                if case .start = action.kind { continue }
                guard autoFulfil, !action.requiresConfirmation else { continue }
                apply(node, centers[node]!.complete(action.id, with: .fulfilled(url: nil, identifier: nil), now: now).1)
            default:
                break
            }
        }
    }

    /// Starts a collaboration on `owner`, its handler fulfilling with `identifier`.
    mutating func start(_ owner: String, identifier: String = "collab-1", title: String = "Trip plan", confirm: Bool = false) -> CollaborationInfo? {
        let (result, produced) = centers[owner]!.start(
            CollaborationMetadata(localIdentifier: "local-\(identifier)", title: title, initiatorHandle: "sip:\(owner)@127.0.0.1"),
            on: session, confirmUpdates: confirm, now: now)
        apply(owner, produced)
        guard case .success(let action) = result else { return nil }
        let (info, more) = centers[owner]!.complete(action.id, with: .fulfilled(url: "parley://collab/\(identifier)", identifier: identifier), now: now)
        apply(owner, more)
        return try? info.get()
    }

    struct NotStarted: Error {}

    /// ``start(_:identifier:title:confirm:)`` that throws when nothing started.
    mutating func started(_ owner: String, identifier: String = "collab-1", title: String = "Trip plan", confirm: Bool = false) throws -> CollaborationInfo {
        guard let info = start(owner, identifier: identifier, title: title, confirm: confirm) else { throw NotStarted() }
        return info
    }

    mutating func center(_ name: String, _ body: (inout CollaborationCenter) -> [CollaborationEffect]) {
        apply(name, body(&centers[name]!))
    }

    func root(_ name: String) -> PersonIdentity { centers[name]!.identity.person }

    func access(_ name: String, _ identifier: String = "collab-1") -> RecipientAccess? { centers[name]!.info(identifier)?.access }

    func participant(_ person: String, in identifier: String = "collab-1", at owner: String) -> CollaborationParticipant? {
        centers[owner]!.info(identifier)?.participants.first { $0.identity == root(person) }
    }

    func notices(_ name: String) -> [CollaborationNotice] {
        (effects[name] ?? []).compactMap { if case .notice(let notice) = $0 { notice } else { nil } }
    }

    func verifications(_ name: String) -> [Result<PersonIdentity, ProofRejection>] {
        (effects[name] ?? []).compactMap { if case .verified(_, _, let result) = $0 { result } else { nil } }
    }
}
