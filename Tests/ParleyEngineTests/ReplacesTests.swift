import ConversationKit
import Foundation
import ParleyEngine
import SIPMessages
import Testing

/// Being the target of an attended transfer (RFC 3891): an INVITE whose Replaces names one of our answered calls
/// takes it over; every other Replaces is refused with the RFC's status.
@Suite("Engine: INVITE with Replaces")
struct ReplacesTests {
    /// A new INVITE from another party (bob, port 5064) carrying `replaces`.
    static func replacing(_ replaces: String, callID: String = "call-2@bob") -> String {
        PeerMessages.invite(callID: callID, branch: "z9hG4bK-rep-\(callID.hashValue & 0xFFFF)")
            .replacingOccurrences(of: "\"Alice\" <sip:alice@127.0.0.1:5062>;tag=peer-tag", with: "<sip:bob@127.0.0.1:5064>;tag=bob-tag")
            + "\nReplaces: \(replaces)\nRequire: replaces"
    }

    @Test("Replaces naming our answered call: the new call is answered at once (200), the old one gets BYE and ends transferred")
    func takesOver() throws {
        let harness = try EngineHarness()
        let tag = try IncomingCallTests.answered(harness)
        harness.deliver(Self.replacing("call-1@peer;to-tag=\(tag);from-tag=peer-tag"), body: PeerMessages.offer)
        let sent = harness.sent()
        #expect(sent.compactMap(\.method) == ["BYE"], "\(sent.map { $0.method ?? "\($0.statusCode ?? 0)" })")
        #expect(sent.compactMap(\.statusCode) == [180, 200])
        let states = harness.transitions.all.reduce(into: [UUID: [String]]()) { $0[$1.conversation.uuid, default: []].append("\($1.conversation.state)") }
        #expect(harness.transitions.states.contains("left(transferred)"), "\(harness.transitions.states)")
        #expect(states.values.contains { $0.first == "ringing" && $0.contains("joining") && $0.count == 2 }, "\(states)")
    }

    @Test("a replacing call is neither refused by do-not-disturb nor forwarded: it takes the call's place")
    func notBusy() throws {
        let harness = try EngineHarness { $0.forwarding = CallForwarding(busy: SIPURI("sip:vm@127.0.0.1:5068")) }
        let tag = try IncomingCallTests.answered(harness)
        harness.engine.setDoNotDisturb(true)
        harness.deliver(Self.replacing("call-1@peer;to-tag=\(tag);from-tag=peer-tag"), body: PeerMessages.offer)
        let sent = harness.sent()
        #expect(sent.compactMap(\.statusCode) == [180, 200] && sent.compactMap(\.method) == ["BYE"], "\(sent.map { $0.method ?? "\($0.statusCode ?? 0)" })")
    }

    @Test("refused: no such dialog or wrong tags 481, a ringing call 481, early-only 486, malformed 400, transfers refused 603")
    func refusals() throws {
        let harness = try EngineHarness()
        let tag = try IncomingCallTests.answered(harness)
        for (replaces, status) in [
            ("nosuch@peer;to-tag=\(tag);from-tag=peer-tag", 481), ("call-1@peer;to-tag=other;from-tag=peer-tag", 481),
            ("call-1@peer;to-tag=\(tag);from-tag=peer-tag;early-only", 486), ("call-1@peer;to-tag=\(tag)", 400),
        ] {
            harness.deliver(Self.replacing(replaces, callID: "new-\(status)-\(replaces.count)@bob"), body: PeerMessages.offer)
            let sent = harness.sent()
            #expect(sent.compactMap(\.statusCode).last == status, "\(replaces): \(sent.map { $0.method ?? "\($0.statusCode ?? 0)" })")
            #expect(!sent.contains { $0.method == "BYE" })
        }
        let ringing = try EngineHarness()
        ringing.deliver(PeerMessages.invite(), body: PeerMessages.offer)
        let early = try #require(ringing.sent().first?.toTag)
        ringing.deliver(Self.replacing("call-1@peer;to-tag=\(early);from-tag=peer-tag"), body: PeerMessages.offer)
        #expect(ringing.sent().compactMap(\.statusCode) == [481])

        let refusing = try EngineHarness { $0.acceptsTransfers = false }
        let refusingTag = try IncomingCallTests.answered(refusing)
        refusing.deliver(Self.replacing("call-1@peer;to-tag=\(refusingTag);from-tag=peer-tag"), body: PeerMessages.offer)
        #expect(refusing.sent().compactMap(\.statusCode) == [603])
        #expect(refusing.transitions.states.last == "joined", "the call goes on")
    }

    @Test("--accept-refer contacts: a REFER is taken from a peer the policy admits, 603 from any other; never: 603")
    func whoMayTransfer() throws {
        let alice = Handle(kind: .generic, value: "sip:alice@127.0.0.1:5062")
        let bob = Handle(kind: .generic, value: "sip:bob@127.0.0.1:5064")
        for (policy, status) in [(CallerPolicy.only([alice], .northAmerica), 202), (.only([bob], .northAmerica), 603), (nil, 603)] {
            let harness = try EngineHarness { $0.transferrers = policy }
            let tag = try IncomingCallTests.answered(harness)
            harness.deliver(PeerMessages.inDialog("REFER", localTag: tag, cseq: 2, branch: "z9hG4bK-refer-1") + "\nRefer-To: <sip:carol@127.0.0.1:5066>")
            #expect(harness.sent().compactMap(\.statusCode).first == status, "\(String(describing: policy))")
        }
    }
}
