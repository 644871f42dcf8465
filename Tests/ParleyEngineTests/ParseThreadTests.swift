import ConversationKit
import Dispatch
import Foundation
import ParleyIO
import ParleyTestSupport
import SIPMessages
import SIPTransport
import Synchronization
import Testing

@testable import ParleyEngine

@Suite("Parse thread: SIP parsed beside the engine's thread")
struct ParseThreadTests {
    private static let source = SIPDestination(
        kind: .udp, address: SIPPeerAddress(host: "127.0.0.1", port: 5062), connection: nil)

    private static func datagram(_ index: Int) -> InboundSIPMessage {
        // Every seventh is malformed (no Call-ID); the rest are OPTIONS with their index in the Call-ID.
        let callID = index % 7 == 3 ? "" : "Call-ID: order-\(index)@peer\r\n"
        let text = "OPTIONS sip:parley@127.0.0.1 SIP/2.0\r\nVia: SIP/2.0/UDP 127.0.0.1:5062;branch=z9hG4bK-\(index)\r\n"
            + "Max-Forwards: 70\r\nFrom: <sip:a@127.0.0.1>;tag=t\r\nTo: <sip:parley@127.0.0.1>\r\n\(callID)"
            + "CSeq: \(index + 1) OPTIONS\r\nContent-Length: 0\r\n\r\n"
        return InboundSIPMessage(
            bytes: Data(text.utf8), kind: .udp, source: source.address, connection: nil,
            local: ListenAddress(kind: .udp, host: "127.0.0.1", port: 5070))
    }

    /// A thread whose delivery signals `entered` for each batch, then waits for `proceed` before it goes on.
    private static func heldThread() -> (ParseThread, entered: DispatchSemaphore, proceed: DispatchSemaphore) {
        let entered = DispatchSemaphore(value: 0), proceed = DispatchSemaphore(value: 0)
        let thread = ParseThread { batch, thread in
            entered.signal()
            proceed.wait()
            thread.release(batch)
        }
        return (thread, entered, proceed)
    }

    @Test("datagrams come back in the order they were submitted, in batches, parsed as the engine parses them")
    func order() throws {
        let delivered = EventRecorder<ParsedInbound>()
        let batches = Mutex(0)
        let thread = ParseThread { batch, thread in
            batches.withLock { $0 += 1 }
            for datagram in batch { delivered.record(datagram) }
            thread.release(batch)  // as the engine does: freed on the thread at its next wake
        }
        defer { thread.stop() }
        let count = 5_000
        for index in 0..<count {
            #expect(thread.submit(Self.datagram(index), from: Self.source, isNewRequest: false) == .queued)
            if index % 100 == 99 { thread.wake() }  // as the engine does at the end of each turn
        }
        thread.wake()
        let all = try #require(delivered.wait(for: count, within: .seconds(30)))
        for (index, datagram) in all.enumerated() {
            #expect(datagram.inbound == Self.datagram(index), "position \(index)")
            let inline = Result { () throws(SIPParseError) in try SIPMessage.parse(datagram.inbound.bytes) }
            #expect(datagram.result == inline, "position \(index)")
        }
        #expect(all.filter { (try? $0.result.get()) == nil }.count == (0..<count).filter { $0 % 7 == 3 }.count)
        #expect(batches.withLock { $0 } <= count)
    }

    @Test("an idle thread sleeps through submissions until wake(), then parses all of them as one batch")
    func wokenOncePerBurst() throws {
        let batches = EventRecorder<[Int]>()
        let thread = ParseThread { batch, thread in
            batches.record(batch.map { Int($0.inbound.bytes.count) })
            thread.release(batch)
        }
        defer { thread.stop() }
        for index in 0..<3 { #expect(thread.submit(Self.datagram(index), from: Self.source, isNewRequest: false) == .queued) }
        #expect(batches.wait(for: 1, within: .milliseconds(200)) == nil, "not woken by a submission")
        thread.wake()
        thread.wake()  // owed nothing more: no second wake-up
        let first = try #require(batches.wait(for: 1, within: .seconds(5)))
        #expect(first == [(0..<3).map { Self.datagram($0).bytes.count }], "three submissions, one wake-up, one batch")
        #expect(thread.submit(Self.datagram(3), from: Self.source, isNewRequest: false) == .queued)
        thread.wake()
        #expect(batches.wait(for: 2, within: .seconds(5))?.last == [Self.datagram(3).bytes.count], "idle again: woken again")
    }

    @Test("what overload control reads: the time spent waiting for work, the queue's age, the longest wait taken")
    func loadMeasures() throws {
        let (thread, entered, proceed) = Self.heldThread()
        defer { thread.stop() }
        let idleBefore = thread.idleTime
        Thread.sleep(forTimeInterval: 0.05)
        #expect(thread.idleTime - idleBefore >= .milliseconds(40), "an idle thread's wait counts as it goes on")
        #expect(thread.backlogAge() == .zero && thread.takeLongestWait() == nil, "nothing queued, nothing taken")
        #expect(thread.submit(Self.datagram(0), from: Self.source, isNewRequest: false) == .queued)
        thread.wake()
        #expect(entered.wait(timeout: .now() + 5) == .success)
        let busySince = thread.idleTime
        #expect(thread.submit(Self.datagram(1), from: Self.source, isNewRequest: false) == .queued)
        Thread.sleep(forTimeInterval: 0.05)
        #expect(thread.backlogAge() >= .milliseconds(40), "the message queued behind a busy thread ages")
        #expect(thread.idleTime - busySince < .milliseconds(20), "a busy thread is not idle")
        _ = thread.takeLongestWait()
        proceed.signal()
        #expect(entered.wait(timeout: .now() + 5) == .success, "the second message taken")
        #expect(try #require(thread.takeLongestWait()) >= .milliseconds(40))
        #expect(thread.takeLongestWait() == nil, "read once")
        #expect(thread.backlogAge() == .zero)
        proceed.signal()
    }

    @Test("new requests are refused from three quarters full, the rest at full; what was taken is delivered; stopped, it says so")
    func bounded() throws {
        let delivered = EventRecorder<Int>()
        let entered = DispatchSemaphore(value: 0), release = DispatchSemaphore(value: 0)
        let thread = ParseThread(limit: 8) { batch, _ in
            entered.signal()
            release.wait()
            delivered.record(batch.count)
        }
        func submit(_ index: Int, new: Bool) -> ParseThread.Submission {
            thread.submit(Self.datagram(index), from: Self.source, isNewRequest: new)
        }
        #expect(submit(0, new: true) == .queued)
        thread.wake()
        #expect(entered.wait(timeout: .now() + 5) == .success, "the thread took the first datagram and is delivering it")
        for index in 1...6 { #expect(submit(index, new: true) == .queued) }
        #expect(submit(7, new: true) == .full, "six wait: a new request is refused at three quarters")
        #expect(submit(8, new: false) == .queued && submit(9, new: false) == .queued, "calls in progress get the rest")
        #expect(submit(10, new: false) == .full, "eight wait: full")
        release.signal()
        #expect(entered.wait(timeout: .now() + 5) == .success)
        release.signal()
        #expect(delivered.wait(for: 2) == [1, 8])
        let stopper = Thread { thread.stop() }
        stopper.start()
        thread.stop()
        thread.stop()
        #expect(submit(11, new: false) == .stopped, "stopped: the caller parses it itself")
        thread.release([])  // a batch handed back after the stop is freed at once
    }

    @Test("call legs the engine forgot are held by the parse thread until it frees them there, not by the engine")
    func forgottenLegs() throws {
        let (thread, entered, proceed) = Self.heldThread()
        defer { thread.stop() }
        // Keep the thread busy delivering, so what is released waits in its hands.
        #expect(thread.submit(Self.datagram(0), from: Self.source, isNewRequest: false) == .queued)
        thread.wake()
        #expect(entered.wait(timeout: .now() + 5) == .success)
        weak var start: ConversationAction?
        do {
            let uuid = UUID()
            let action = ConversationAction(
                conversationUUID: uuid, kind: .start(handles: [CallLegTable.handle], isVideo: false))
            start = action
            let invite = SIPRequest(
                method: .invite, uri: SIPURI("sip:bob@192.0.2.2:5062")!,
                via: SIPVia(transport: "UDP", host: "192.0.2.1", port: 5070, branch: "z9hG4bK-forgotten"),
                from: SIPAddress(uri: SIPURI("sip:parley@192.0.2.1:5070")!, parameters: ["tag": "our-tag"]),
                to: SIPAddress(uri: SIPURI("sip:bob@192.0.2.2:5062")!), callID: "forgotten@192.0.2.1", cseq: 1)
            let (leg, _) = CallLeg.outgoing(
                uuid: uuid, invite: invite, callID: "forgotten@192.0.2.1", localTag: "our-tag",
                remoteHandle: CallLegTable.handle, destination: CallLegTable.peer,
                offer: CallLegTable.TableContext.peerOffer(hold: false), start: action, in: CallLegTable.TableContext())
            thread.release([], legs: [leg])
        }
        #expect(start != nil, "the leg (and the Start it carries) waits for the parse thread")
        proceed.signal()
        let deadline = ContinuousClock.now + .seconds(10)
        while start != nil, ContinuousClock.now < deadline { Thread.sleep(forTimeInterval: 0.001) }
        #expect(start == nil, "freed by the parse thread once it went on")
    }

    @Test("an engine parsing on the thread carries calls over real UDP and TCP; a bad offer gets 488, a malformed request 400",
        arguments: [SIPTransportKind.udp, .tcp])
    func callsOverTheNetwork(kind: SIPTransportKind) throws {
        let engineLoop = try EventLoop(name: "engine")
        let peerLoop = try EventLoop(name: "peer")
        defer {
            peerLoop.shutdown()
            engineLoop.shutdown()
        }
        let environment = LoopEnvironment(loop: engineLoop)
        let engineBox = Mutex<ParleyEngine?>(nil)
        let transport = SIPTransport(loop: engineLoop, tls: nil, limits: TransportLimits()) { inbound in
            engineBox.withLock { $0 }?.receive(inbound)
        }
        environment.attach(transport)
        let local = try transport.listenSync(ListenAddress(kind: kind, host: "127.0.0.1", port: 0))
        var configuration = EngineConfiguration(listenAddresses: [local], autoAnswerDelay: .zero)
        configuration.parsesOnThread = true
        configuration.overload = nil
        configuration.exemptSources = ["127.0.0.1"]
        let manager = try ConversationManager(configuration: .init(includesConversationInRecents: false))
        let engine = ParleyEngine(configuration: configuration, manager: manager, environment: environment)
        engineBox.withLock { $0 = engine }
        defer { engineBox.withLock { $0 = nil } }

        let received = EventRecorder<InboundSIPMessage>()
        let peer = SIPTransport(loop: peerLoop, tls: nil, limits: TransportLimits()) { received.record($0) }
        let peerAddress = try peer.listenSync(ListenAddress(kind: kind, host: "127.0.0.1", port: 0))
        let target = SIPDestination(
            kind: kind, address: SIPPeerAddress(host: "127.0.0.1", port: local.port), connection: nil)
        func send(_ lines: [String], body: String = "") {
            let text = lines.joined(separator: "\r\n") + "\r\nContent-Length: \(body.utf8.count)\r\n\r\n" + body
            peerLoop.execute { peer.send(Data(text.utf8), to: target) }
        }
        func headers(_ method: String, _ call: Int, cseq: Int, toTag: String? = nil) -> [String] {
            [
                "\(method) sip:parley@127.0.0.1:\(local.port) SIP/2.0",
                "Via: SIP/2.0/\(kind.viaToken) 127.0.0.1:\(peerAddress.port);rport;branch=z9hG4bK-\(method)-\(call)",
                "Max-Forwards: 70", "From: <sip:alice@127.0.0.1>;tag=peer-\(call)",
                "To: <sip:parley@127.0.0.1>" + (toTag.map { ";tag=\($0)" } ?? ""), "Call-ID: thread-\(call)@peer",
                "CSeq: \(cseq) \(method)", "Contact: <sip:alice@127.0.0.1:\(peerAddress.port)" + (kind == .udp ? ">" : ";transport=tcp>"),
            ]
        }
        let offer = PeerMessages.offer.replacingOccurrences(of: "\n", with: "\r\n")
        let calls = 20
        for call in 0..<calls { send(headers("INVITE", call, cseq: 1) + ["Content-Type: application/sdp"], body: offer) }
        func responses(_ status: Int, _ method: String) -> [SIPResponse] {
            received.all.compactMap { (try? SIPMessage.parse($0.bytes))?.response }
                .filter { $0.statusCode == status && $0.headers.cseq?.method.description == method }
        }
        #expect(received.wait(until: { _ in responses(200, "INVITE").count == calls }, within: .seconds(20)))
        for answer in responses(200, "INVITE") {
            let call = Int(answer.headers.callID!.dropFirst("thread-".count).prefix { $0.isNumber })!
            let tag = try #require(answer.headers.toTag)
            send(headers("ACK", call, cseq: 1, toTag: tag))
            send(headers("BYE", call, cseq: 2, toTag: tag))
        }
        #expect(received.wait(until: { _ in responses(200, "BYE").count == calls }, within: .seconds(20)))
        // An offer the parse thread could not read: 488, as when the engine parses it itself.
        send(headers("INVITE", 98, cseq: 1) + ["Content-Type: application/sdp"], body: "v=0\r\nm=broken\r\n")
        #expect(received.wait(until: { _ in !responses(488, "INVITE").isEmpty }))
        // A Max-Forwards that is no number: malformed, answered 400 from what can be read.
        send(headers("OPTIONS", 99, cseq: 1).map { $0.hasPrefix("Max-Forwards") ? "Max-Forwards: many" : $0 })
        #expect(received.wait(until: { _ in received.all.contains { (try? SIPMessage.parse($0.bytes))?.response?.statusCode == 400 } }))
        let statistics = engine.statistics
        #expect(statistics.incomingCalls == calls && statistics.malformedMessages == 1 && statistics.parseQueueDrops == 0)
        #expect(statistics.liveCalls == 0)
    }
}
