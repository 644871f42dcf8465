import ConversationKit
import Foundation
import SIPMessages
import Synchronization
import SIPTransport
import Testing

@testable import ParleyEngine

@Suite("Overload control: the shedder machine")
struct LoadShedderTests {
    /// The defaults, but shedding after two windows at 95 % (the expectations below count windows from there).
    static let quick: OverloadPolicy = {
        var policy = OverloadPolicy()
        policy.enterBusy = 0.95
        policy.enterWindows = 2
        return policy
    }()

    @Test("the defaults: five windows running at 97 % busy or more before anything is shed")
    func defaults() {
        var shedder = LoadShedder(policy: OverloadPolicy())
        for _ in 0..<3 { #expect(shedder.sample(busy: 1) == nil) }
        #expect(shedder.sample(busy: 0.96) == nil, "below 97 %: the count starts again")
        for _ in 0..<4 { #expect(shedder.sample(busy: 0.98) == nil) }
        #expect(shedder.sample(busy: 0.98) == .began(busy: 0.98))
    }

    @Test("a single saturated window is absorbed; two begin shedding, which grows by a step each saturated window")
    func entering() {
        var shedder = LoadShedder(policy: Self.quick)
        #expect(shedder.sample(busy: 1) == nil)
        #expect(shedder.sample(busy: 0.5) == nil, "the burst ended")
        #expect(shedder.sample(busy: 0.97) == nil)
        #expect(shedder.sample(busy: 0.99) == .began(busy: 0.99))
        #expect(shedder.isShedding && shedder.sharePercent == 5)
        for _ in 0..<4 { _ = shedder.sample(busy: 1) }
        #expect(shedder.sharePercent == 25)
        // Between the thresholds the share holds.
        _ = shedder.sample(busy: 0.9)
        #expect(shedder.sharePercent == 25)
    }

    @Test("exactly the share is shed, evenly; from dropShare on shed UDP requests are dropped; never more than maxShare")
    func shedding() {
        var shedder = LoadShedder(policy: Self.quick)
        _ = shedder.sample(busy: 1)
        _ = shedder.sample(busy: 1)
        for _ in 0..<4 { _ = shedder.sample(busy: 1) }  // 25 %
        let verdicts = (0..<100).map { _ in shedder.sheds() }
        #expect(verdicts.filter { $0 }.count == 25)
        #expect(!verdicts[0..<3].contains(true) && verdicts[3], "every fourth")
        #expect(!shedder.drops)
        for _ in 0..<13 { _ = shedder.sample(busy: 1) }
        #expect(!shedder.drops, "90 %")
        _ = shedder.sample(busy: 1)
        #expect(shedder.drops, "95 %")
        for _ in 0..<100 { _ = shedder.sample(busy: 1) }
        #expect(shedder.sharePercent == 95)
        var shedAtMost = 0
        for _ in 0..<100 where shedder.sheds() { shedAtMost += 1 }
        #expect(shedAtMost == 95, "some calls always get through")
    }

    @Test("below leaveBusy the share goes down two steps a window, below half of it at once; the end says how much was shed")
    func leaving() {
        var shedder = LoadShedder(policy: Self.quick)
        for _ in 0..<8 { _ = shedder.sample(busy: 1) }  // 35 %
        for _ in 0..<20 { _ = shedder.sheds() }
        #expect(shedder.sample(busy: 0.5) == nil)
        #expect(shedder.sharePercent == 25)
        #expect(shedder.sample(busy: 0.5) == nil)
        #expect(shedder.sample(busy: 0.5) == nil)
        #expect(shedder.sharePercent == 5)
        #expect(shedder.sample(busy: 0.5) == .ended(shed: 7))
        for _ in 0..<20 { _ = shedder.sample(busy: 1) }
        #expect(shedder.sample(busy: 0.1) == .ended(shed: 0), "idle: at once")
        #expect(!shedder.isShedding)
        let shedWhenCalm = shedder.sheds()
        #expect(!shedWhenCalm)
    }

    @Test("a wait of starvedWait saturates a window whatever the busy share (threads waiting for a core look idle)")
    func starvedThreads() {
        var shedder = LoadShedder(policy: Self.quick)
        for _ in 0..<5 {
            #expect(shedder.sample(busy: 0.9, longestWait: .milliseconds(99)) == nil, "busy under enterBusy, wait under starvedWait")
        }
        #expect(!shedder.isShedding)
        #expect(shedder.sample(busy: 0.75, longestWait: .milliseconds(100)) == nil)
        #expect(shedder.sample(busy: 0.75, longestWait: .milliseconds(250)) == .began(busy: 0.75, starved: true))
        #expect(shedder.sharePercent == 10, "two steps: the wait was 2.5 × starvedWait")
        _ = shedder.sample(busy: 0.75, longestWait: .milliseconds(200))
        #expect(shedder.sharePercent == 20, "still starved: two steps up")
        #expect(shedder.sample(busy: 0.75, longestWait: nil) == nil, "no wait measured: the busy share alone, two steps down")
        #expect(shedder.sample(busy: 0.75, longestWait: nil) == .ended(shed: 0))
    }

    @Test("starved windows begin shedding after starvedEnterWindows, whatever enterWindows says, by up to four steps")
    func starvedEntry() {
        var shedder = LoadShedder(policy: OverloadPolicy())  // enterWindows 5, starvedEnterWindows 2
        #expect(shedder.sample(busy: 0.5, longestWait: .milliseconds(120)) == nil)
        #expect(shedder.sample(busy: 0.5, longestWait: .milliseconds(90)) == nil, "not starved: the count starts again")
        #expect(shedder.sample(busy: 0.5, longestWait: .milliseconds(100)) == nil)
        #expect(shedder.sample(busy: 0.5, longestWait: .milliseconds(950)) == .began(busy: 0.5, starved: true))
        #expect(shedder.sharePercent == 20, "at most four steps at once")
        _ = shedder.sample(busy: 1, longestWait: .milliseconds(960))
        #expect(shedder.sharePercent == 40)
    }

    @Test("while shedding, a saturated window whose wait fell by a quarter holds the share, unless still starved; one that did not steps up")
    func drainingBacklog() {
        var shedder = LoadShedder(policy: Self.quick)
        _ = shedder.sample(busy: 1, longestWait: .milliseconds(30))
        #expect(shedder.sample(busy: 1, longestWait: .milliseconds(40)) == .began(busy: 1))
        #expect(shedder.sharePercent == 5)
        // Each window, fully busy: its longest wait (ms), then the share it leaves, and why.
        let windows: [(wait: Int, share: Int, why: Comment)] = [
            (300, 20, "the wait grew to three starvedWaits: three steps"),
            (225, 30, "down by a quarter but still starved: two steps (callers retransmit after T1)"),
            (80, 30, "no longer starved and down by a quarter: the share drains the backlog, it holds"),
            (70, 35, "down by less than a quarter: a step"),
            (30, 35, "falling still, though backed up: holds"),
            (30, 40, "backed up and not falling: a step"),
        ]
        for window in windows {
            _ = shedder.sample(busy: 1, longestWait: .milliseconds(window.wait))
            #expect(shedder.sharePercent == window.share, window.why)
        }
    }

    @Test("a request picked to shed but spared (a retransmission of a call in progress) passes its turn to the next")
    func spared() {
        var shedder = LoadShedder(policy: Self.quick)
        for _ in 0..<11 { _ = shedder.sample(busy: 1) }  // 50 %
        #expect(shedder.sharePercent == 50)
        let before = [shedder.sheds(), shedder.sheds()]
        #expect(before == [false, true])
        shedder.spare()
        let after = [shedder.sheds(), shedder.sheds(), shedder.sheds()]
        #expect(after == [true, false, true], "as if the spared one had not come: the next one is shed in its place")
        #expect(shedder.sample(busy: 0.1) == .ended(shed: 2), "the spared one is not counted as shed")
    }

    @Test("busy windows count only with a backlog in the queue; while shedding, a short queue lowers the share and a request that hardly waited is taken")
    func backlog() {
        var shedder = LoadShedder(policy: Self.quick)
        for _ in 0..<5 {
            #expect(shedder.sample(busy: 1, longestWait: .milliseconds(5)) == nil, "a burst the buffers absorb")
        }
        #expect(!shedder.isShedding)
        #expect(shedder.sample(busy: 1, longestWait: .milliseconds(30)) == nil)
        #expect(shedder.sample(busy: 1, longestWait: .milliseconds(20)) == .began(busy: 1))
        for _ in 0..<3 { _ = shedder.sample(busy: 1, longestWait: .milliseconds(50)) }
        #expect(shedder.sharePercent == 20)
        let prompt = (0..<50).map { _ in shedder.sheds(waited: .microseconds(500)) }
        #expect(!prompt.contains(true), "under shortQueueWait: taken, and no credit used")
        let queued = (0..<50).map { _ in shedder.sheds(waited: .milliseconds(3)) }
        #expect(queued.filter { $0 }.count == 10 && queued[4] && !queued[3], "every fifth")
        let overStream = (0..<5).map { _ in shedder.sheds(waited: nil) }
        #expect(overStream.filter { $0 }.count == 1, "no wait measured: the share alone")
        // Still fully busy, but the queue stays short: a step down each window, then over.
        #expect(shedder.sample(busy: 1, longestWait: .milliseconds(1)) == nil)
        #expect(shedder.sharePercent == 15)
        #expect(shedder.sample(busy: 1, longestWait: .milliseconds(1)) == nil)
        #expect(shedder.sample(busy: 1, longestWait: .milliseconds(1)) == nil)
        #expect(shedder.sample(busy: 1, longestWait: .milliseconds(1)) == .ended(shed: 11))
    }

    @Test("queue waits out of order are a configuration problem")
    func waitThresholds() {
        var configuration = EngineConfiguration(listenAddresses: [ListenAddress(kind: .udp, host: "127.0.0.1", port: 5070)])
        #expect(configuration.problems.isEmpty)
        configuration.overload?.shortQueueWait = .milliseconds(30)
        #expect(configuration.problems == ["overload thresholds out of range"], "short wait above the backlog wait")
        configuration.overload?.shortQueueWait = .milliseconds(-1)
        #expect(configuration.problems == ["overload thresholds out of range"])
        configuration.overload = OverloadPolicy()
        configuration.overload?.starvedWait = .milliseconds(10)
        #expect(configuration.problems == ["overload thresholds out of range"], "starved below the backlog wait")
        configuration.overload = OverloadPolicy()
        configuration.overload?.starvedEnterWindows = 0
        #expect(configuration.problems == ["overload thresholds out of range"])
        configuration.overload = OverloadPolicy()
        configuration.overload?.maxSharePercent = 0
        #expect(configuration.problems == ["overload thresholds out of range"], "a ceiling of nothing would log an episode a window")
    }

    @Test("measures out of range are clamped")
    func clamping() {
        var shedder = LoadShedder(policy: Self.quick)
        _ = shedder.sample(busy: 7)
        #expect(shedder.busy == 1)
        _ = shedder.sample(busy: -3)
        #expect(shedder.busy == 0)
    }
}

@Suite("Overload control: which datagrams may be shed unread")
struct RequestPeekTests {
    private func bytes(_ lines: [String]) -> Data { Data((lines.joined(separator: "\r\n") + "\r\n\r\n").utf8) }

    @Test("new out-of-dialog requests: INVITE, OPTIONS, REGISTER, MESSAGE without a To tag (compact t: too)")
    func newRequests() {
        for method in ["INVITE", "OPTIONS", "REGISTER", "MESSAGE"] {
            #expect(RequestPeek.isNewOutOfDialogRequest(bytes([
                "\(method) sip:parley@127.0.0.1 SIP/2.0", "Via: SIP/2.0/UDP 127.0.0.1;branch=z9hG4bK1",
                "To: <sip:parley@127.0.0.1>", "From: <sip:a@b>;tag=1",
            ])), "\(method)")
        }
        #expect(RequestPeek.isNewOutOfDialogRequest(bytes(["INVITE sip:p@h SIP/2.0", "t  : <sip:p@h>"])))
    }

    @Test("everything else, or anything unsure, is not: a To tag, ACK/BYE/CANCEL/PRACK, responses, folded or absent To")
    func notNew() {
        let cases: [[String]] = [
            ["INVITE sip:p@h SIP/2.0", "To: <sip:p@h>;tag=abc"],
            ["INVITE sip:p@h SIP/2.0", "TO: <sip:p@h>;TAG=abc"],
            ["MESSAGE sip:p@h SIP/2.0", "To: \"Tagged\" <sip:p@h>"],
            ["ACK sip:p@h SIP/2.0", "To: <sip:p@h>"],
            ["BYE sip:p@h SIP/2.0", "To: <sip:p@h>"],
            ["CANCEL sip:p@h SIP/2.0", "To: <sip:p@h>"],
            ["PRACK sip:p@h SIP/2.0", "To: <sip:p@h>"],
            ["SIP/2.0 200 OK", "To: <sip:p@h>"],
            ["INVITE sip:p@h SIP/2.0", "To: <sip:p@h>", " ;tag=folded"],
            ["INVITE sip:p@h SIP/2.0", "From: <sip:a@b>"],
            ["garbage"],
            [],
        ]
        for lines in cases {
            #expect(!RequestPeek.isNewOutOfDialogRequest(bytes(lines)), "\(lines)")
        }
    }

    @Test("a refusal written from the bytes parses, copies Via, From, To, Call-ID and CSeq, and tags To as ours")
    func statelessRefusal() throws {
        let invite = PeerMessages.invite().replacingOccurrences(of: "\n", with: "\r\n") + "\r\nContent-Length: 0\r\n\r\n"
        let bytes = try #require(StatelessRefusal.response(
            to: Data(invite.utf8), status: 503, reason: "Overloaded", tagSuffix: "abc", extra: [("Retry-After", "3")]))
        let response = try #require(try SIPMessage.parse(bytes).response)
        let request = try #require(try SIPMessage.parse(Data(invite.utf8)).request)
        #expect(response.statusCode == 503 && response.reasonPhrase == "Overloaded")
        #expect(response.headers.vias == request.headers.vias && response.headers.from == request.headers.from)
        #expect(response.headers.callID == request.headers.callID && response.headers.cseq == request.headers.cseq)
        #expect(response.headers.to?.tag == "sr-abc" && response.headers.to?.uri == request.headers.to?.uri)
        #expect(response.headers["Retry-After"] == "3" && response.body.isEmpty)
        let ack = "ACK sip:parley@127.0.0.1:5070 SIP/2.0\r\nVia: SIP/2.0/UDP 127.0.0.1:5062;branch=z9hG4bK-in-1\r\n"
            + "To: <sip:parley@127.0.0.1:5070>;tag=sr-abc\r\nCall-ID: call-1@peer\r\nCSeq: 1 ACK\r\n\r\n"
        #expect(StatelessRefusal.isACKOfRefusal(Data(ack.utf8)))
        #expect(!StatelessRefusal.isACKOfRefusal(Data(ack.replacingOccurrences(of: "tag=sr-", with: "tag=xx-").utf8)))
        #expect(!StatelessRefusal.isACKOfRefusal(Data(ack.replacingOccurrences(of: "ACK ", with: "BYE ").utf8)))
        for broken in [
            invite.replacingOccurrences(of: "Call-ID: call-1@peer\r\n", with: ""),
            invite.replacingOccurrences(of: "To: <sip:parley@127.0.0.1:5070>", with: "To: <sip:parley@127.0.0.1:5070>;tag=x"),
            invite.replacingOccurrences(of: "CSeq: 1 INVITE", with: "CSeq: 1\r\n INVITE"),
            String(invite.dropLast(4)),
        ] {
            #expect(StatelessRefusal.response(to: Data(broken.utf8), status: 503, reason: "R", tagSuffix: "t", extra: []) == nil)
        }
    }

    @Test("the Call-ID read from the bytes: full or compact name, trimmed; none when absent, empty, folded or after the body")
    func callIDPeek() {
        let invite = PeerMessages.invite().replacingOccurrences(of: "\n", with: "\r\n") + "\r\nContent-Length: 0\r\n\r\n"
        #expect(StatelessRefusal.callID(of: Data(invite.utf8)) == "call-1@peer")
        let compact = invite.replacingOccurrences(of: "Call-ID: call-1@peer", with: "i :  c2@peer \t")
        #expect(StatelessRefusal.callID(of: Data(compact.utf8)) == "c2@peer")
        for broken in [
            invite.replacingOccurrences(of: "Call-ID: call-1@peer\r\n", with: ""),
            invite.replacingOccurrences(of: "Call-ID: call-1@peer", with: "Call-ID:  "),
            invite.replacingOccurrences(of: "Call-ID: call-1@peer", with: "Call-ID:\r\n call-1@peer"),
            invite.replacingOccurrences(of: "Call-ID: call-1@peer\r\n", with: "") + "Call-ID: late@peer\r\n",
            "",
        ] {
            #expect(StatelessRefusal.callID(of: Data(broken.utf8)) == nil)
        }
    }

    @Test("mutated messages: whenever the parser sees a dialog's request (a To tag, ACK, BYE, CANCEL), the peek said no")
    func neverShedsWhatTheParserCallsInDialog() {
        var generator = SystemRandomNumberGenerator()
        let seeds = [
            PeerMessages.invite(), PeerMessages.inDialog("BYE", localTag: "ours", cseq: 2, branch: "z9hG4bK-b"),
            PeerMessages.inDialog("INVITE", localTag: "ours", cseq: 3, branch: "z9hG4bK-r"),
        ].map { Array(($0.replacingOccurrences(of: "\n", with: "\r\n") + "\r\nContent-Length: 0\r\n\r\n").utf8) }
        let alphabet = Array("tTaAgG;:=<> \r\n\t,\"ACKBYECANCEL".utf8)
        var checked = 0
        for round in 0..<20_000 {
            var bytes = seeds[round % seeds.count]
            for _ in 0..<Int.random(in: 1...4, using: &generator) {
                let index = Int.random(in: 0..<bytes.count, using: &generator)
                switch Int.random(in: 0..<3, using: &generator) {
                case 0: bytes[index] = alphabet.randomElement(using: &generator)!
                case 1: bytes.insert(alphabet.randomElement(using: &generator)!, at: index)
                default: if bytes.count > 1 { bytes.remove(at: index) }
                }
            }
            let data = Data(bytes)
            let peek = RequestPeek.isNewOutOfDialogRequest(data)
            guard let request = (try? SIPMessage.parse(data))?.request else { continue }
            checked += 1
            let inDialog = request.headers.to?.tag != nil || [.ack, .bye, .cancel, .prack].contains(request.method)
            if inDialog && peek {
                Issue.record("shed-able by the peek, in a dialog by the parser: \(String(decoding: bytes, as: UTF8.self))")
                return
            }
        }
        #expect(checked > 1000)
    }
}

@Suite("Engine: overload control")
struct OverloadEngineTests {
    /// An engine answering at once, its thread measured as the test says.
    private func harness() throws -> EngineHarness {
        let harness = try EngineHarness {
            $0.autoAnswerDelay = .zero
            $0.overload = LoadShedderTests.quick
        }
        harness.environment.idleTime = .zero
        harness.engine.start()
        return harness
    }

    /// Moves time by `windows` probe windows with the engine's thread busy the whole time (or idle).
    private func run(_ harness: EngineHarness, windows: Int, busy: Bool) {
        for _ in 0..<windows {
            if !busy { harness.environment.idleTime! += .milliseconds(100) }
            harness.environment.advance(by: .milliseconds(100))
        }
    }

    private func call(_ harness: EngineHarness, _ index: Int) -> String {
        let callID = "load-\(index)@peer"
        harness.deliver(PeerMessages.invite(callID: callID, branch: "z9hG4bK-load-\(index)"), body: PeerMessages.offer)
        harness.environment.advance(by: .zero)
        return callID
    }

    @Test("saturated: a share of new INVITEs gets 503 with a jittered Retry-After; BYE and CANCEL always go through")
    func shedsNewCallsOnly() throws {
        let harness = try harness()
        let upCallID = call(harness, 0)
        let upTag = try #require(harness.engine.localTag(ofCallID: upCallID))
        run(harness, windows: 7, busy: true)  // shedding at 30 %
        var statistics = harness.engine.statistics
        #expect(statistics.overloaded && statistics.loadBusyPercent == 100 && statistics.loadShedPercent == 30)
        _ = harness.sent()
        for index in 1...20 { _ = call(harness, index) }
        let answers = harness.sent().compactMap(\.response)
        let refused = answers.filter { $0.statusCode == 503 }
        #expect(refused.count == 6, "30 % of 20")
        #expect(answers.filter { $0.statusCode == 200 }.count == 14)
        #expect(refused.allSatisfy { (1...5).contains(Int($0.headers["Retry-After"] ?? "") ?? 0) })
        #expect(refused.allSatisfy { $0.reasonPhrase == "Overloaded" })
        // A call in progress ends normally, however many BYEs come.
        harness.deliver(PeerMessages.inDialog("BYE", localTag: upTag, cseq: 2, branch: "z9hG4bK-bye-0", callID: upCallID))
        #expect(harness.sent().compactMap(\.response?.statusCode) == [200])
        // A CANCEL carries no To tag but is never shed: it is a 481 here, not a 503.
        for index in 0..<10 {
            harness.deliver(PeerMessages.outOfDialog("CANCEL", cseq: 1, branch: "z9hG4bK-gone-\(index)", callID: "gone-\(index)@peer"))
        }
        #expect(Set(harness.sent().compactMap(\.response?.statusCode)) == [481])
        statistics = harness.engine.statistics
        #expect(statistics.requestsShed == 6 && statistics.requestsShedDropped == 0)
        // The ACK of a refusal is absorbed unread; 64·T1 after the last refusal no ACK is looked at for one.
        func acknowledge(_ refusal: SIPResponse, branch: String) {
            harness.deliver(PeerMessages.inDialog(
                "ACK", localTag: refusal.headers.toTag ?? "", cseq: 1, branch: branch, callID: refusal.headers.callID ?? ""))
        }
        acknowledge(refused[0], branch: "z9hG4bK-load-ack-0")
        #expect(harness.engine.statistics.refusalACKsAbsorbed == 1)
        harness.environment.idleTime! += .seconds(33)
        harness.environment.advance(by: .seconds(33))
        _ = harness.sent()  // the unacknowledged 200s retransmitted meanwhile
        acknowledge(refused[1], branch: "z9hG4bK-load-ack-1")
        #expect(harness.engine.statistics.refusalACKsAbsorbed == 1, "no refusal in the last 64·T1")
        #expect(harness.sent().compactMap(\.response).isEmpty, "an ACK is never answered")
    }

    @Test("at 95 % shed, shed UDP INVITEs are dropped unread; in-dialog requests still answered; idle again: all in")
    func dropsThenRecovers() throws {
        let harness = try harness()
        let upCallID = call(harness, 0)
        let upTag = try #require(harness.engine.localTag(ofCallID: upCallID))
        run(harness, windows: 20, busy: true)  // 95 %
        #expect(harness.engine.statistics.loadShedPercent == 95)
        _ = harness.sent()
        for index in 1...20 { _ = call(harness, index) }
        let answers = harness.sent().compactMap(\.response)
        #expect(!answers.contains { $0.statusCode == 503 }, "dropped, not answered")
        #expect(answers.filter { $0.statusCode == 200 }.count == 1, "5 % of 20 get in")
        #expect(harness.engine.statistics.requestsShedDropped == 19)
        let received = harness.engine.statistics.messagesReceived
        harness.deliver(PeerMessages.inDialog("BYE", localTag: upTag, cseq: 2, branch: "z9hG4bK-bye-0", callID: upCallID))
        #expect(harness.sent().compactMap(\.response?.statusCode) == [200])
        #expect(harness.engine.statistics.messagesReceived == received + 1)
        // Idle: the share steps down to nothing, and every new call is taken.
        run(harness, windows: 1, busy: false)
        #expect(!harness.engine.statistics.overloaded)
        _ = harness.sent()
        for index in 21...30 { _ = call(harness, index) }
        #expect(harness.sent().compactMap(\.response).filter { $0.statusCode == 200 }.count == 10)
    }

    @Test("while shedding, new calls whose datagrams hardly waited in the queue are taken: recovery needs no window")
    func shortQueueIsTaken() throws {
        let harness = try harness()
        run(harness, windows: 7, busy: true)  // shedding at 30 %
        _ = harness.sent()
        for index in 1...20 {
            harness.deliver(PeerMessages.invite(callID: "prompt-\(index)@peer", branch: "z9hG4bK-prompt-\(index)"),
                body: PeerMessages.offer, waited: .microseconds(300))
            harness.environment.advance(by: .zero)
        }
        var answers = harness.sent().compactMap(\.response)
        #expect(answers.filter { $0.statusCode == 200 }.count == 20 && !answers.contains { $0.statusCode == 503 })
        for index in 1...20 {
            harness.deliver(PeerMessages.invite(callID: "queued-\(index)@peer", branch: "z9hG4bK-queued-\(index)"),
                body: PeerMessages.offer, waited: .milliseconds(30))
            harness.environment.advance(by: .zero)
        }
        answers = harness.sent().compactMap(\.response)
        #expect(answers.filter { $0.statusCode == 503 }.count == 6, "30 % of those that waited")
        run(harness, windows: 1, busy: true)
        let statistics = harness.engine.statistics
        #expect(statistics.queueWaitMilliseconds == 30 && statistics.loadShedPercent == 35)
    }

    @Test("a retransmitted INVITE of a call already answered is not refused: the 200 goes again, the next new call is shed")
    func retransmissionsOfCallsInProgressAreSpared() throws {
        let harness = try harness()
        let upCallID = call(harness, 0)
        #expect(harness.sent().compactMap(\.response?.statusCode).contains(200))
        run(harness, windows: 11, busy: true)  // shedding at 50 %
        #expect(harness.engine.statistics.loadShedPercent == 50)
        _ = harness.sent()
        _ = call(harness, 1)  // credit 50: taken
        #expect(harness.sent().compactMap(\.response?.statusCode).contains(200))
        harness.deliver(PeerMessages.invite(callID: upCallID, branch: "z9hG4bK-load-0"), body: PeerMessages.offer)
        harness.environment.advance(by: .zero)
        let again = harness.sent().compactMap(\.response)
        #expect(again.map(\.statusCode) == [200] && again.first?.headers.callID == upCallID, "its 200 again, no 503")
        let next = [call(harness, 2), call(harness, 3), call(harness, 4)]
        let answers = harness.sent().compactMap(\.response)
        #expect(answers.filter { $0.statusCode == 503 }.compactMap(\.headers.callID) == [next[0], next[2]])
        #expect(answers.filter { $0.statusCode == 200 }.compactMap(\.headers.callID) == [next[1]])
        // Only an INVITE is spared: other new requests naming the call's Call-ID are shed as any.
        for index in 0..<2 {
            harness.deliver(PeerMessages.outOfDialog("OPTIONS", cseq: 10 + index, branch: "z9hG4bK-options-\(index)", callID: upCallID))
        }
        #expect(harness.sent().compactMap(\.response?.statusCode) == [200, 503])
        let statistics = harness.engine.statistics
        #expect(statistics.retransmissionsSpared == 1 && statistics.requestsShed == 3)
    }

    @Test("at --log-level warning the log says when shedding begins and ends, and nothing per call")
    func warningLevel() throws {
        let lines = Mutex<[(EngineLog.Level, String)]>([])
        let harness = try EngineHarness(log: EngineLog(level: .warning) { level, line in lines.withLock { $0.append((level, line)) } }) {
            $0.autoAnswerDelay = .zero
            $0.overload = LoadShedderTests.quick
        }
        harness.environment.idleTime = .zero
        harness.engine.start()
        _ = call(harness, 0)
        run(harness, windows: 3, busy: true)
        run(harness, windows: 1, busy: false)
        let logged = lines.withLock { $0 }
        #expect(logged.map(\.0) == [EngineLog.Level.warning, .warning])
        #expect(logged.first?.1.hasPrefix("overload: the engine's threads were 100% busy for 2 windows of 100 ms running;") == true)
        #expect(logged.last?.1.hasPrefix("overload over: ") == true)
        #expect(EngineLog.Level(name: "Warning") == .warning && EngineLog.Level.warning < .info && EngineLog.Level.error < .warning)
    }

    @Test("without a measured idle time (or with overload control off) nothing is ever shed")
    func offWithoutMeasure() throws {
        let harness = try EngineHarness { $0.autoAnswerDelay = .zero }
        harness.engine.start()
        harness.environment.advance(by: .seconds(5))
        #expect(harness.environment.pendingTimers == 0, "no probe runs")
        let off = try EngineHarness { $0.autoAnswerDelay = .zero; $0.overload = nil }
        off.environment.idleTime = .zero
        off.engine.start()
        off.environment.advance(by: .seconds(5))
        _ = off.sent()
        for index in 1...10 { _ = call(off, index) }
        #expect(off.sent().compactMap(\.response).filter { $0.statusCode == 200 }.count == 10)
        #expect(!off.engine.statistics.overloaded)
    }
}
