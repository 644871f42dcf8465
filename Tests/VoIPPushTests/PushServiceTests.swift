import ConversationKit
import Foundation
import Testing

@testable import VoIPPush

/// Every rule of the simulator, on a manual clock.
@Suite("push service")
struct PushServiceTests {
    typealias H = ServiceHarness

    @Test("register: the token becomes known, the device is told its strikes")
    func register() {
        var h = H()
        let effects = h.register("d1")
        #expect(effects.messages(to: H.device) == [.registered(PushRegistration(token: "d1", strikes: 0, disabled: false))])
        #expect(effects.logs == ["registered token=d1 connection=#1 strikes=0/3 disabled=false"])
        #expect(h.service.statusReport.devices == [.init(token: "d1", connected: true, strikes: 0, disabled: false, queued: 0)])
        let bad = h.register("has space")
        #expect(bad.faults.map(\.path) == ["token"])
        #expect(h.register("").faults.first?.message == "token: empty")
    }

    @Test("a push to a connected device is delivered at once; the outcome waits for the ack")
    func deliveredReported() {
        var h = H()
        _ = h.register("d1")
        let request = h.request()
        let sent = h.send(request)
        #expect(sent.pushes == [PushDelivery(id: "p1", token: "d1", payload: request.payload)])
        #expect(sent.messages(to: H.device).count == 1)
        #expect(sent.outcomes.isEmpty)
        #expect(h.timers[.ackTimeout(pushID: "p1")] == h.now.addingTimeInterval(5))
        #expect(sent.logs.first?.hasPrefix("pushed push=p1 token=d1 to #1") == true)
        let acked = h.ack("p1", .reported)
        #expect(acked.messages(to: H.sender) == [.outcome(PushOutcome(
            token: "d1", pushID: "p1", result: .delivered, reported: true, detail: "the device reported the conversation"))])
        #expect(acked.logs == ["delivered push=p1 token=d1 reported=true"])
        #expect(h.timers.isEmpty)
        #expect(h.service.counters.reported == 1)
        #expect(h.service.statusReport.devices.first?.strikes == 0)
        // The same ack again is stray.
        #expect(h.ack("p1", .reported).faults.map(\.code) == [.unknownPush])
    }

    @Test("an ack saying not reported is a strike; the sender hears delivered, reported false")
    func notReported() {
        var h = H()
        _ = h.register("d1")
        _ = h.send(h.request())
        let acked = h.ack("p1", .notReported("engine asleep"))
        let outcome = acked.outcomes.first
        #expect(outcome?.result == .delivered)
        #expect(outcome?.reported == false)
        #expect(outcome?.detail.contains("engine asleep") == true)
        #expect(outcome?.detail.contains("strike 1/3") == true)
        #expect(acked.logs.contains("delivered push=p1 token=d1 reported=false reason=\"engine asleep\""))
        #expect(acked.logs.contains("strike 1/3 token=d1 push=p1"))
        #expect(h.service.statusReport.devices.first?.strikes == 1)
    }

    @Test("strikes count up to maxFailures, then the token is disabled and the device told")
    func strikesDisable() {
        var h = H(PushService.Configuration(maxFailures: 2))
        _ = h.register("d1")
        _ = h.send(h.request())
        _ = h.ack("p1", .notReported("no"))
        _ = h.send(h.request(callID: "call-2"))
        let second = h.ack("p2", .notReported("no"))
        #expect(second.logs.contains("strike 2/2 token=d1 push=p2"))
        #expect(second.logs.contains("token d1 disabled after 2 strikes"))
        #expect(second.messages(to: H.device).map(\.kind) == [.error])
        #expect(second.faults.first?.code == .tokenDisabled)
        #expect(second.outcomes.first?.detail.contains("token disabled") == true)
        let refused = h.send(h.request(callID: "call-3"))
        #expect(refused.outcomes.map(\.result) == [.tokenDisabled])
        #expect(refused.pushes.isEmpty)
        _ = h.close(H.device)
        #expect(h.register("d1").messages(to: H.device) == [.registered(PushRegistration(token: "d1", strikes: 2, disabled: true))])
        #expect(h.service.counters.disabledTokens == 1)
        #expect(h.service.counters.tokenDisabled == 1)
    }

    @Test("no ack within the ack timeout counts as not reported, and is a strike")
    func ackTimeout() {
        var h = H(PushService.Configuration(ackTimeout: 2))
        _ = h.register("d1")
        _ = h.send(h.request())
        #expect(h.advance(by: 1.999).isEmpty)
        let fired = h.advance(by: 0.001)
        #expect(fired.outcomes.map(\.result) == [.delivered])
        #expect(fired.outcomes.first?.reported == false)
        #expect(fired.outcomes.first?.detail.contains("no ack within the ack timeout") == true)
        #expect(fired.logs.contains("ack timeout push=p1 token=d1 after 2s: not reported"))
        #expect(fired.logs.contains("strike 1/3 token=d1 push=p1"))
        // A late ack is stray; a stale timer does nothing.
        #expect(h.ack("p1", .reported).faults.map(\.code) == [.unknownPush])
        #expect(h.run { $0.timerFired(.ackTimeout(pushID: "p1"), now: $1) }.isEmpty)
        #expect(h.service.counters.ackTimeouts == 1)
    }

    @Test("a cancel push is never a strike, whatever the ack says or if none comes")
    func cancelNotAStrike() {
        var h = H(PushService.Configuration(maxFailures: 1))
        _ = h.register("d1")
        _ = h.send(h.request(cancel: true))
        let acked = h.ack("p1", .notReported("nothing to report"))
        #expect(acked.outcomes.first?.reported == false)
        #expect(acked.outcomes.first?.detail.contains("a cancel push: not a strike") == true)
        #expect(acked.logs.contains("cancel push=p1 token=d1 not reported: not a strike"))
        _ = h.send(h.request(cancel: true))
        let timedOut = h.advance(by: 5)
        #expect(timedOut.outcomes.count == 1)
        #expect(!timedOut.logs.contains { $0.hasPrefix("strike") })
        #expect(h.service.statusReport.devices.first?.disabled == false)
        #expect(h.service.statusReport.devices.first?.strikes == 0)
    }

    @Test("a token never registered is unknown")
    func unknownToken() {
        var h = H()
        let effects = h.send(h.request("nobody"))
        #expect(effects.outcomes == [PushOutcome(token: "nobody", result: .unknownToken, detail: "no device ever registered token nobody")])
        #expect(effects.logs == ["unknown token=nobody: push refused"])
        #expect(h.service.counters.unknownToken == 1)
    }

    @Test("a payload already expired at send is refused as expired")
    func expiredAtSend() {
        var h = H()
        _ = h.register("d1")
        let effects = h.send(h.request(ttl: 0))
        #expect(effects.outcomes.map(\.result) == [.expired])
        #expect(effects.pushes.isEmpty)
        #expect(h.service.counters.expired == 1)
    }

    @Test("offline: stored until expiry, delivered when the device registers; its ack still counts")
    func storedThenDelivered() {
        var h = H()
        _ = h.register("d1")
        _ = h.close(H.device)
        let stored = h.send(h.request(ttl: 30))
        #expect(stored.outcomes.map(\.result) == [.stored])
        #expect(stored.outcomes.first?.pushID == "p1")
        #expect(stored.outcomes.first?.detail == "device offline: stored until 2026-01-01T00:00:30.000Z")
        #expect(stored.logs == ["stored push=p1 token=d1 until 2026-01-01T00:00:30.000Z (device offline)"])
        #expect(h.timers[.storedExpiry(pushID: "p1")] == h.now.addingTimeInterval(30))
        #expect(h.service.statusReport.devices.first?.queued == 1)
        _ = h.advance(by: 10)
        let registered = h.register("d1", on: H.otherDevice)
        #expect(registered.messages(to: H.otherDevice).map(\.kind) == [.registered, .push])
        #expect(registered.pushes.map(\.id) == ["p1"])
        #expect(h.timers[.storedExpiry(pushID: "p1")] == nil)
        #expect(h.timers[.ackTimeout(pushID: "p1")] != nil)
        let acked = h.ack("p1", .notReported("late"), from: H.otherDevice)
        #expect(acked.outcomes.isEmpty)  // the sender already had "stored"
        #expect(acked.logs.contains("strike 1/3 token=d1 push=p1"))
        #expect(h.service.counters.stored == 1)
        #expect(h.service.counters.pushed == 1)
    }

    @Test("a stored push that expires is dropped and logged")
    func storedExpires() {
        var h = H()
        _ = h.register("d1")
        _ = h.close(H.device)
        _ = h.send(h.request(ttl: 30))
        let expired = h.advance(by: 30)
        #expect(expired.logs == ["expired push=p1 token=d1 (stored, never delivered)"])
        #expect(h.service.statusReport.devices.first?.queued == 0)
        #expect(h.register("d1").pushes.isEmpty)
        #expect(h.service.counters.expired == 1)
    }

    @Test("a stored push found expired at registration (its timer not yet run) is dropped")
    func expiredAtRegistration() {
        var h = H()
        _ = h.register("d1")
        _ = h.close(H.device)
        _ = h.send(h.request(ttl: 30))
        h.now = h.now.addingTimeInterval(31)  // the timer has not fired yet
        let registered = h.register("d1")
        #expect(registered.pushes.isEmpty)
        #expect(registered.logs.contains("expired push=p1 token=d1 (stored, never delivered)"))
        #expect(h.timers.isEmpty)
    }

    @Test("expiration: storage ends at the earlier of it and the payload's expiry; 0 means now or never")
    func expiration() {
        var h = H()
        _ = h.register("d1")
        _ = h.close(H.device)
        _ = h.send(h.request(ttl: 60, expiration: 10))
        #expect(h.timers[.storedExpiry(pushID: "p1")] == h.now.addingTimeInterval(10))
        let never = h.send(h.request(expiration: 0))
        #expect(never.outcomes.map(\.result) == [.expired])
        #expect(never.outcomes.first?.detail == "expiration 0 and the device is offline: not stored")
        _ = h.register("d1")
        _ = h.send(h.request(expiration: 0))
        #expect(h.history.pushes.count == 2)  // p1 from storage, then the expiration-0 push to the connected device
    }

    @Test("a newer push with the same collapse id replaces the stored one")
    func collapse() {
        var h = H()
        _ = h.register("d1")
        _ = h.close(H.device)
        _ = h.send(h.request(callID: "a", collapseID: "alice"))
        _ = h.send(h.request(callID: "b", collapseID: "bob"))
        let replaced = h.send(h.request(callID: "c", collapseID: "alice"))
        #expect(replaced.logs.contains("collapsed push=p1 into push=p3 token=d1 collapse-id=alice"))
        #expect(h.timers[.storedExpiry(pushID: "p1")] == nil)
        #expect(h.service.statusReport.devices.first?.queued == 2)
        let delivered = h.register("d1")
        #expect(delivered.pushes.map(\.payload.callID) == ["b", "c"])
        #expect(delivered.pushes.map(\.collapseID) == ["bob", "alice"])
        #expect(h.service.counters.collapsed == 1)
    }

    @Test("storage is bounded per token: the oldest goes")
    func storageBound() {
        var h = H(PushService.Configuration(maxStoredPerToken: 2))
        _ = h.register("d1")
        _ = h.close(H.device)
        for call in ["a", "b", "c"] { _ = h.send(h.request(callID: call)) }
        #expect(h.history.logs.contains("dropped push=p1 token=d1: more than 2 stored"))
        #expect(h.register("d1").pushes.map(\.payload.callID) == ["b", "c"])
    }

    @Test("disabling drops what is stored")
    func disableDropsStored() {
        var h = H(PushService.Configuration(maxFailures: 1))
        _ = h.register("d1")
        _ = h.send(h.request(callID: "a"))        // p1 in flight on #1
        _ = h.register("d1", on: H.otherDevice)  // the token moves to #3
        _ = h.close(H.otherDevice)               // and goes offline; p1 is still in flight on #1
        _ = h.send(h.request(callID: "b"))        // p2 stored
        #expect(h.service.statusReport.devices.first?.queued == 1)
        let acked = h.ack("p1", .notReported("no"))
        #expect(acked.logs.contains("token d1 disabled after 1 strikes"))
        #expect(acked.logs.contains("dropped push=p2 token=d1: token disabled"))
        #expect(acked.faults.isEmpty)  // no connection holds the token to be told now
        #expect(h.timers.isEmpty)
        #expect(h.service.statusReport.devices.first?.queued == 0)
        #expect(h.register("d1").pushes.isEmpty)
    }

    @Test("a device that disconnects with a push in flight: not reported, a strike")
    func lostInFlight() {
        var h = H()
        _ = h.register("d1")
        _ = h.send(h.request())
        let closed = h.close(H.device)
        #expect(closed.logs.contains("lost push=p1 token=d1: #1 closed before acking"))
        #expect(closed.logs.contains("strike 1/3 token=d1 push=p1"))
        #expect(closed.logs.contains("offline token=d1"))
        #expect(closed.outcomes.first?.reported == false)
        #expect(closed.outcomes.first?.detail.contains("disconnected before acking") == true)
        #expect(h.timers.isEmpty)
        #expect(h.service.counters.lostInFlight == 1)
        #expect(h.service.statusReport.devices.first?.connected == false)
    }

    @Test("a token registered elsewhere moves; the old connection hears 'replaced'")
    func replaced() {
        var h = H()
        _ = h.register("d1")
        let moved = h.register("d1", on: H.otherDevice)
        #expect(moved.messages(to: H.device).map(\.kind) == [.error])
        #expect(moved.faults.first?.code == .replaced)
        #expect(h.send(h.request()).pushes.count == 1)
        #expect(h.history.messages(to: H.otherDevice).map(\.kind) == [.registered, .push])
        // The old connection closing does not take the token offline.
        _ = h.close(H.device)
        #expect(h.service.statusReport.devices.first?.connected == true)
    }

    @Test("invalid values get an invalid outcome naming the member")
    func invalid() {
        var h = H()
        _ = h.register("d1")
        var empty = h.request()
        empty.payload.callID = ""
        #expect(h.send(empty).outcomes.first?.detail == "payload.callID: empty")
        var backwards = h.request()
        backwards.payload.expiresAt = backwards.payload.sentAt.addingTimeInterval(-1)
        #expect(h.send(backwards).outcomes.first?.detail == "payload.expiresAt: before payload.sentAt")
        #expect(h.send(h.request(collapseID: String(repeating: "c", count: 65))).outcomes.first?.detail == "collapseID: longer than 64 bytes")
        #expect(h.send(h.request(expiration: -1)).outcomes.first?.detail == "expiration: must be a number of seconds, 0 or more")
        #expect(h.send(h.request("bad\ttoken")).outcomes.first?.detail == "token: contains white space or control characters")
        #expect(h.history.outcomes.allSatisfy { $0.result == .invalid })
        #expect(h.service.counters.invalid == 5)
        #expect(h.history.pushes.isEmpty)
    }

    @Test("peer text is bounded: long fields are invalid, long reasons are clipped, big status reports are cut")
    func bounded() throws {
        var h = H()
        _ = h.register("d1")
        var long = h.request()
        long.payload.callID = String(repeating: "c", count: 60_000)
        #expect(h.send(long).outcomes.first?.detail == "payload.callID: longer than 1024 bytes")
        var name = h.request()
        name.payload.handle.displayName = String(repeating: "n", count: 1025)
        #expect(h.send(name).outcomes.first?.detail == "payload.handle.displayName: longer than 1024 bytes")
        let hugeToken = h.send(h.request(String(repeating: "t", count: 50_000)))
        #expect(hugeToken.outcomes.first?.token.unicodeScalars.count == 65)
        _ = h.send(h.request())
        let acked = h.ack("p1", .notReported(String(repeating: "r", count: 50_000)))
        #expect(acked.outcomes.first.map { $0.detail.utf8.count < 400 } == true)
        #expect(acked.logs.allSatisfy { $0.utf8.count < 400 })

        for index in 0..<400 { _ = h.register(String(format: "%03d", index) + String(repeating: "x", count: 250), on: PushConnectionID(UInt64(10 + index))) }
        let report = h.service.statusReport(fittingIn: PushFraming.defaultMaximumLength)
        #expect(PushCodec.encode(.statusReport(report)).count <= PushFraming.defaultMaximumLength)
        let omitted = try #require(report.omittedDevices)
        #expect(omitted > 0)
        #expect(report.devices.count + omitted == 401)
        #expect(PushCodec.encode(.statusReport(h.service.statusReport)).count > PushFraming.defaultMaximumLength)
        #expect(h.service.statusReport(fittingIn: 10_000_000).omittedDevices == nil)
        guard case .statusReport(let sent) = h.run({ $0.receive(.status, from: H.sender, now: $1) }).messages(to: H.sender).first else {
            Issue.record("no status report")
            return
        }
        #expect(sent == report)
    }

    @Test("a sender that goes away does not stop the ack from counting")
    func senderGone() {
        var h = H()
        _ = h.register("d1")
        _ = h.send(h.request())
        _ = h.close(H.sender)
        let acked = h.ack("p1", .notReported("x"))
        #expect(acked.outcomes.isEmpty)
        #expect(acked.logs.contains("strike 1/3 token=d1 push=p1"))
    }

    @Test("status, unexpected messages, errors from peers, rejected frames")
    func protocolMessages() {
        var h = H()
        _ = h.run { service, _ in service.connectionOpened(H.device, peer: "127.0.0.1:40000") }
        _ = h.register("d1")
        let status = h.run { $0.receive(.status, from: H.sender, now: $1) }
        guard case .statusReport(let report) = status.messages(to: H.sender).first else {
            Issue.record("no status report")
            return
        }
        #expect(report.devices.map(\.token) == ["d1"])
        #expect(report.counters.registrations == 1)
        let unexpected = h.run { $0.receive(.registered(PushRegistration(token: "x", strikes: 0, disabled: false)), from: H.device, now: $1) }
        #expect(unexpected.faults.map(\.code) == [.unexpectedMessage])
        #expect(h.run { $0.receive(.error(PushFault(code: .badField, message: "m")), from: H.device, now: $1) }.messages(to: H.device).isEmpty)
        let fault = PushFault(code: .malformedJSON, message: "not JSON")
        let kept = h.run { service, _ in service.rejectFrame(from: H.device, fault: fault, closing: false) }
        #expect(kept == [PushService.Effect.send(.error(fault), to: H.device), .log("malformed frame from #1 (127.0.0.1:40000): not JSON")])
        let closing = h.run { service, _ in service.rejectFrame(from: H.device, fault: fault, closing: true) }
        #expect(closing.last == .close(H.device, reason: "not JSON"))
        #expect(h.service.counters.protocolErrors == 3)
        #expect(h.service.disconnect(token: "d1") == [.close(H.device, reason: "disconnected by the simulator"), .log("disconnecting token=d1 on #1")])
        #expect(h.service.disconnect(token: "nobody").isEmpty)
    }
}
