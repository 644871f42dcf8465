import Foundation
import GroupActivities

/// Several messengers wired leg to leg, with their MESSAGEs carried by hand: a test picks what is answered how.
struct Mesh {
    struct Sent {
        let node: String
        let leg: UUID
        let transmission: GroupTransmission
    }

    var nodes: [String: GroupMessenger] = [:]
    /// (node, leg) → (peer node, peer leg).
    var links: [String: [UUID: (String, UUID)]] = [:]
    var inFlight: [Sent] = []
    var events: [String: [GroupEffect]] = [:]
    var now = Duration.zero
    /// The most transmissions one leg had out at once.
    var mostInFlightPerLeg = 0

    init(_ names: [String]) {
        for name in names { nodes[name] = GroupMessenger(localName: name.capitalized) }
    }

    /// A call between two nodes: a leg on each side, connected; `group` merges it on `a`'s side.
    @discardableResult
    mutating func call(_ a: String, _ b: String, group: UUID? = nil, formatAtA: GroupLegFormat = .json) -> (UUID, UUID) {
        let legA = UUID(), legB = UUID()
        links[a, default: [:]][legA] = (b, legB)
        links[b, default: [:]][legB] = (a, legA)
        apply(a, nodes[a]!.legChanged(.init(uuid: legA, name: b.capitalized, format: formatAtA, isStream: false, group: group, isConnected: true), now: now))
        apply(b, nodes[b]!.legChanged(.init(uuid: legB, name: a.capitalized, format: .json, isStream: false, group: nil, isConnected: true), now: now))
        return (legA, legB)
    }

    mutating func apply(_ node: String, _ effects: [GroupEffect]) {
        for effect in effects {
            if case .transmit(let leg, let transmission) = effect {
                inFlight.append(Sent(node: node, leg: leg, transmission: transmission))
                let out = inFlight.count(where: { $0.node == node && $0.leg == leg })
                mostInFlightPerLeg = max(mostInFlightPerLeg, out)
            } else {
                events[node, default: []].append(effect)
            }
        }
    }

    /// Carries the oldest MESSAGE; `answer` overrides the receiver's status (nil: no answer at all, a timeout).
    @discardableResult
    mutating func step(answer override: ((Sent) -> Int??)? = nil) -> Bool {
        guard !inFlight.isEmpty else { return false }
        let sent = inFlight.removeFirst()
        if let forced = override?(sent) {
            guard let status = forced else {
                apply(sent.node, nodes[sent.node]!.failed(leg: sent.leg, token: sent.transmission.token, now: now))
                return true
            }
            apply(sent.node, nodes[sent.node]!.answered(leg: sent.leg, token: sent.transmission.token, status: status, retryAfter: status == 503 ? .seconds(2) : nil, now: now))
            return true
        }
        guard let (peer, peerLeg) = links[sent.node]?[sent.leg] else { return true }
        let (status, effects) = nodes[peer]!.receive(sent.transmission.body, contentType: sent.transmission.contentType, on: peerLeg, now: now)
        apply(peer, effects)
        apply(sent.node, nodes[sent.node]!.answered(leg: sent.leg, token: sent.transmission.token, status: status, retryAfter: nil, now: now))
        return true
    }

    mutating func run(limit: Int = 100_000) {
        var steps = 0
        while step() {
            steps += 1
            precondition(steps < limit, "the mesh does not settle")
        }
    }

    /// What a node's frontend was handed, in order.
    func deliveries(_ node: String) -> [GroupDelivery] {
        (events[node] ?? []).compactMap { if case .deliver(let d) = $0 { d } else { nil } }
    }

    func reports(_ node: String) -> [GroupSendReport] {
        (events[node] ?? []).compactMap { if case .sendFinished(let r) = $0 { r } else { nil } }
    }

    func offers(_ node: String) -> [GroupSessionInfo] {
        (events[node] ?? []).compactMap { if case .sessionOffered(let s) = $0 { s } else { nil } }
    }

    func participantChanges(_ node: String) -> [(added: [String], removed: [String])] {
        (events[node] ?? []).compactMap {
            if case .participantsChanged(_, let added, let removed, _) = $0 { (added.map(\.name), removed.map(\.name)) } else { nil }
        }
    }

    mutating func send(_ node: String, _ data: JSONValue, type: String = "app.item", to: GroupRecipients = .all, mode: GroupDeliveryMode = .reliable, keep: Bool = false, session: String) -> Result<UInt64, GroupSendError> {
        let outcome = nodes[node]!.send(data, type: type, to: to, mode: mode, keep: keep, in: session, now: now)
        apply(node, outcome.effects)
        return outcome.result
    }

    /// A merged call A–B, A–C with a session A hosts and both joined.
    static func mergedGroup() -> (Mesh, String) {
        var mesh = Mesh(["a", "b", "c"])
        let group = UUID()
        let (ab, _) = mesh.call("a", "b", group: group)
        mesh.call("a", "c", group: group)
        let session = mesh.activateAndJoin(host: "a", on: ab, members: ["b", "c"])
        return (mesh, session)
    }

    /// Host A activates on its group; B and C (and whoever else) join what they are offered.
    mutating func activateAndJoin(host: String, on leg: UUID, members: [String]) -> String {
        let outcome = nodes[host]!.activate(GroupActivity(identifier: "com.example.list", title: "List"), on: leg, sessionID: "S1", localID: "host-\(host)", now: now)
        apply(host, outcome.effects)
        run()
        for member in members {
            let offer = offers(member).last!
            apply(member, nodes[member]!.join(offer.id, now: now).effects)
        }
        run()
        return "S1"
    }
}
