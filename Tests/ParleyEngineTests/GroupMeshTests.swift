import ConversationKit
import Foundation
import GroupActivities
import ParleyEngine
import SIPMessages
import SIPTransport
import Synchronization
import Testing

/// Engines wired to each other in memory by destination port, on one manual timeline, with a seeded lossy "relay":
/// each datagram may be dropped, sent twice or held back behind the next one.
final class EngineMesh {
    let nodes: [EngineHarness]
    private var random: UInt64
    /// The share of datagrams dropped, duplicated and reordered (each), while on.
    var faultRate = 0.0
    private var heldBack: [(Data, EngineHarness, EngineHarness)] = []
    private(set) var refusedMessages: [String] = []
    private let groupEvents = GroupEventLog()

    init(names: [String], seed: UInt64) throws {
        random = seed
        var nodes: [EngineHarness] = []
        for (index, name) in names.enumerated() {
            let node = try EngineHarness(local: ListenAddress(kind: .udp, host: "127.0.0.1", port: UInt16(5181 + index))) {
                $0.userName = name.lowercased()
                $0.displayName = name
            }
            nodes.append(node)
        }
        self.nodes = nodes
        for (index, node) in nodes.enumerated() {
            node.engine.observeEvents { [groupEvents] event in
                if case .group(let effect) = event { groupEvents.effects.withLock { $0[index, default: []].append(effect) } }
            }
        }
    }

    func events(_ index: Int) -> [GroupEffect] { groupEvents.effects.withLock { $0[index] ?? [] } }

    func deliveries(_ index: Int) -> [GroupDelivery] {
        events(index).compactMap { if case .deliver(let delivery) = $0 { delivery } else { nil } }
    }

    func reports(_ index: Int) -> [GroupSendReport] {
        events(index).compactMap { if case .sendFinished(let report) = $0 { report } else { nil } }
    }

    private func chance() -> Double {
        random = random &* 6364136223846793005 &+ 1442695040888963407
        return Double(random >> 11) / Double(1 << 53)
    }

    func pump() {
        while true {
            var any = false
            for node in nodes {
                for sent in node.environment.takeSent() {
                    any = true
                    if case .response(let response) = sent.message, response.headers.cseq?.method == .message,
                        response.statusCode >= 300
                    {
                        refusedMessages.append("\(response.statusCode) \(response.reasonPhrase) at \(node.environment.elapsed)")
                    }
                    guard let target = nodes.first(where: { $0.local.port == sent.destination.address.port }) else { continue }
                    let bytes = sent.message.serialize()
                    if faultRate > 0 {
                        if chance() < faultRate { continue }
                        if chance() < faultRate { heldBack.append((bytes, node, target)); continue }
                        if chance() < faultRate { deliver(bytes, from: node, to: target) }
                    }
                    deliver(bytes, from: node, to: target)
                    for (held, from, to) in heldBack { deliver(held, from: from, to: to) }
                    heldBack.removeAll()
                }
            }
            if !any { break }
        }
    }

    private func deliver(_ bytes: Data, from sender: EngineHarness, to receiver: EngineHarness) {
        receiver.engine.receive(InboundSIPMessage(
            bytes: bytes, kind: .udp, source: SIPPeerAddress(host: sender.local.host, port: sender.local.port),
            connection: nil, local: receiver.local))
    }

    func advance(by duration: Duration) {
        var left = duration
        while left > .zero {
            let step = min(.milliseconds(25), left)
            for node in nodes { node.environment.advance(by: step) }
            pump()
            left -= step
        }
    }

    /// Node 0 calls each of the others (they answer) and merges the calls; returns node 0's conversations.
    func mergedCall() throws -> [UUID] {
        var calls: [UUID] = []
        for node in nodes.dropFirst() {
            let call = UUID()
            let handle = Handle(
                kind: .generic, value: "sip:\(node.engine.configuration.userName)@127.0.0.1:\(node.local.port)",
                displayName: node.engine.configuration.displayName)
            try nodes[0].manager.perform([.start(conversationUUID: call, handles: [handle])])
            pump()
            let ringing = try #require(node.manager.conversations.first { $0.state == .ringing })
            try node.manager.perform([.join(conversationUUID: ringing.uuid)])
            pump()
            calls.append(call)
        }
        for call in calls.dropFirst() { try nodes[0].manager.perform([.merge(conversationUUID: calls[0], with: call)]) }
        pump()
        return calls
    }

    /// Node 0 activates a session on its merged call; the others join what they are offered.
    func sharedSession() throws -> String {
        let calls = try mergedCall()
        let session = try nodes[0].engine.activateGroupSession(GroupActivity(identifier: "com.example.list", title: "List"), on: calls[0]).get()
        advance(by: .milliseconds(50))
        for index in nodes.indices.dropFirst() {
            let offered = try #require(events(index).compactMap { if case .sessionOffered(let info) = $0 { info } else { nil } }.first)
            #expect(offered.id == session.id)
            _ = try nodes[index].engine.joinGroupSession(offered.id).get()
        }
        advance(by: .milliseconds(50))
        return session.id
    }
}

/// The group events each engine of a mesh told, by its index.
final class GroupEventLog: Sendable {
    let effects = Mutex<[Int: [GroupEffect]]>([:])
}

@Suite("Engine: group sessions over SIP MESSAGE between engines in memory")
struct GroupMeshTests {
    @Test("three engines in a merged call: offered, joined, every member active everywhere")
    func sessionAcrossAMergedCall() throws {
        let mesh = try EngineMesh(names: ["Alice", "Bob", "Carol"], seed: 1)
        let session = try mesh.sharedSession()
        for node in mesh.nodes {
            let info = try #require(node.engine.groupSessions.first)
            #expect(info.id == session && info.state == .joined)
            #expect(info.activeParticipants.map(\.name).sorted() == ["Alice", "Bob", "Carol"])
        }
        #expect(mesh.nodes[0].engine.groupSessions.first?.isHost == true)
    }

    @Test("two members send 1,000 messages each through a relay that drops, duplicates and reorders 10 %: one order, no loss, no duplicate, no 500")
    func reliableOrderUnderLoss() throws {
        let mesh = try EngineMesh(names: ["Alice", "Bob", "Carol"], seed: 20261202)
        let session = try mesh.sharedSession()
        mesh.faultRate = 0.10
        let count = 1_000
        for index in 0..<count {
            for sender in [1, 2] {
                _ = try mesh.nodes[sender].engine.sendGroupMessage(.integer(Int64(index)), type: "n\(sender)", in: session).get()
            }
            // Each leg carries one MESSAGE at a time, and a lost one waits T1 (500 ms) for its retransmission: at 10 %
            // loss a leg moves about ten a second, and the host's leg to each member carries two per round here.
            mesh.advance(by: .milliseconds(250))
        }
        mesh.faultRate = 0
        mesh.advance(by: .seconds(120))
        let atHost = mesh.deliveries(0), atBob = mesh.deliveries(1), atCarol = mesh.deliveries(2)
        #expect(atHost.count == 2 * count)
        #expect(atBob.count == count && atCarol.count == count)
        for list in [atHost, atBob, atCarol] {
            let seqs = list.map(\.seq)
            #expect(seqs == seqs.sorted() && Set(seqs).count == seqs.count)
        }
        // FIFO per sender, and each message has the same place (seq) for everyone.
        #expect(atCarol.map(\.data) == (0..<count).map { JSONValue.integer(Int64($0)) })
        #expect(atBob.map(\.data) == (0..<count).map { JSONValue.integer(Int64($0)) })
        let hostSeqOfBob = atHost.filter { $0.type == "n1" }.map(\.seq)
        #expect(atCarol.map(\.seq) == hostSeqOfBob)
        #expect(mesh.refusedMessages.isEmpty, "MESSAGE refusals: \(mesh.refusedMessages.prefix(10))")
        for sender in [1, 2] {
            let reports = mesh.reports(sender)
            #expect(reports.count == count)
            #expect(reports.allSatisfy { $0.deliveredTo.count == 2 && $0.failed.isEmpty && $0.error == nil })
        }
    }

    @Test("a member whose call ends leaves the session; the others are told, and keep their order")
    func memberLeavesWithItsCall() throws {
        let mesh = try EngineMesh(names: ["Alice", "Bob", "Carol"], seed: 3)
        let session = try mesh.sharedSession()
        let carolsCall = try #require(mesh.nodes[2].manager.conversations.first)
        try mesh.nodes[2].manager.perform([.end(conversationUUID: carolsCall.uuid)])
        mesh.advance(by: .milliseconds(100))
        let removed = mesh.events(1).compactMap { if case .participantsChanged(_, _, let removed, _) = $0 { removed.map(\.name) } else { nil } }
        #expect(removed.last == ["Carol"])
        _ = try mesh.nodes[1].engine.sendGroupMessage(.string("still here"), type: "text", in: session).get()
        mesh.advance(by: .milliseconds(100))
        #expect(mesh.deliveries(0).last?.data == .string("still here"))
        #expect(mesh.reports(1).last?.deliveredTo.count == 1)
        #expect(mesh.events(2).contains { if case .sessionChanged(let info) = $0 { info.state == .invalidated(.conversationEnded) } else { false } })
    }

    @Test("the messenger hears of no call before the first group request; then it knows every call up and each change")
    func wokenByTheFirstRequest() throws {
        let mesh = try EngineMesh(names: ["Alice", "Bob", "Carol"], seed: 5)
        let calls = try mesh.mergedCall()  // both up before anything asked for a group session
        let alice = mesh.nodes[0].engine
        #expect(calls.allSatisfy { alice.isEligibleForGroupSession($0) }, "calls that came up while it slept")
        #expect(!alice.isEligibleForGroupSession(UUID()))
        try mesh.nodes[0].manager.perform([.end(conversationUUID: calls[1])])
        mesh.pump()
        #expect(!alice.isEligibleForGroupSession(calls[1]), "a change after it woke")
        #expect(alice.isEligibleForGroupSession(calls[0]))
        // Bob's engine never woke before the offer: the MESSAGE wakes it, with his call already up.
        let session = try alice.activateGroupSession(GroupActivity(identifier: "com.example.list", title: "List"), on: calls[0]).get()
        mesh.advance(by: .milliseconds(50))
        #expect(mesh.events(1).contains { if case .sessionOffered(let info) = $0 { info.id == session.id } else { false } })
    }

    @Test("a MESSAGE from someone who is in no call with us is refused with 403")
    func strangersAreRefused() throws {
        let mesh = try EngineMesh(names: ["Alice", "Bob"], seed: 4)
        _ = try mesh.sharedSession()
        mesh.nodes[0].deliver("""
            MESSAGE sip:alice@127.0.0.1:5181 SIP/2.0
            Via: SIP/2.0/UDP 127.0.0.1:5062;branch=z9hG4bK-stranger
            From: <sip:mallory@127.0.0.9>;tag=m1
            To: <sip:alice@127.0.0.1:5181>
            Call-ID: stranger-1
            CSeq: 1 MESSAGE
            Max-Forwards: 70
            Content-Type: text/plain
            """, body: "hello group")
        let answer = try #require(mesh.nodes[0].sent().compactMap { if case .response(let r) = $0 { r } else { nil } }.first)
        #expect(answer.statusCode == 403)
        mesh.advance(by: .milliseconds(100))
        #expect(mesh.deliveries(0).isEmpty && mesh.deliveries(1).isEmpty)
    }
}
