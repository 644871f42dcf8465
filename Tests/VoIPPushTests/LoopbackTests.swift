import ConversationKit
import Dispatch
import Foundation
import Testing

@testable import VoIPPush

/// The simulator, the device client and the blocking connection on real loopback sockets.
@Suite("loopback")
struct LoopbackTests {
    @Test("a device client registers and receives a push a sender sends; the sender hears the outcome")
    func deliver() throws {
        let sim = try SimulatorProbe()
        defer { sim.simulator.stop() }
        let device = DeviceProbe(sim.endpoint)
        defer { device.client.stop() }
        #expect(device.waitRegistered())
        #expect(device.client.state == .registered(PushRegistration(token: "d1", strikes: 0, disabled: false)))

        let sender = try PushConnection(to: sim.endpoint)
        let request = pushRequest()
        let outcome = try sender.send(request)
        #expect(outcome.result == .delivered)
        #expect(outcome.reported == true)
        #expect(outcome.pushID == "p1")
        let delivered = try #require(device.deliveries.all.first)
        #expect(delivered.id == "p1")
        #expect(delivered.payload.uuid == request.payload.uuid)
        #expect(delivered.payload.handle == request.payload.handle)
        #expect(abs(delivered.payload.sentAt.timeIntervalSince(request.payload.sentAt)) <= 0.0005 + 1e-6)
        #expect(sim.waitForLog("delivered push=p1 token=d1 reported=true"))
        #expect(device.events.wait { $0.contains(.acknowledged(delivered, .reported)) })

        let status = try sender.status()
        #expect(status.devices == [.init(token: "d1", connected: true, strikes: 0, disabled: false, queued: 0)])
        #expect(status.counters.reported == 1)
        #expect(try sender.send(pushRequest("nobody")).result == .unknownToken)
    }

    @Test("IPv6 loopback", .enabled(if: ipv6LoopbackAvailable))
    func ipv6() throws {
        let sim = try SimulatorProbe(host: "::1")
        defer { sim.simulator.stop() }
        #expect(sim.endpoint.description.hasPrefix("[::1]:"))
        let device = DeviceProbe(sim.endpoint)
        defer { device.client.stop() }
        #expect(device.waitRegistered())
        #expect(try PushConnection(to: sim.endpoint).send(pushRequest()).reported == true)
        #expect(sim.waitForLog("connection #1 from [::1]:"))
    }

    @Test("the device client reconnects and registers again when the simulator drops it, or restarts")
    func reconnect() throws {
        var sim = try SimulatorProbe()
        let device = DeviceProbe(sim.endpoint, backoff: PushBackoff(initial: 0.05, maximum: 0.2))
        defer { device.client.stop() }
        #expect(device.waitRegistered())
        sim.simulator.disconnect(token: "d1")
        #expect(device.waitRegistered(count: 2))
        #expect(device.events.all.contains {
            if case .stateChanged(.waitingToReconnect(_, 1, _)) = $0 { return true }
            return false
        })
        #expect(try PushConnection(to: sim.endpoint).send(pushRequest()).reported == true)

        let endpoint = sim.endpoint
        sim.simulator.stop()
        #expect(device.events.wait { events in
            events.filter { if case .stateChanged(.waitingToReconnect) = $0 { true } else { false } }.count >= 2
        })
        sim = try SimulatorProbe(port: endpoint.port)
        defer { sim.simulator.stop() }
        #expect(device.waitRegistered(count: 3))
        #expect(try PushConnection(to: sim.endpoint).send(pushRequest()).reported == true)
    }

    @Test("the device client backs off while nothing listens, then connects")
    func nothingListening() throws {
        // Find a free port by listening and stopping.
        let probe = try SimulatorProbe()
        let endpoint = probe.endpoint
        probe.simulator.stop()
        let device = DeviceProbe(endpoint, backoff: PushBackoff(initial: 0.05, maximum: 0.1))
        defer { device.client.stop() }
        #expect(device.events.wait { events in
            events.contains {
                if case .stateChanged(.waitingToReconnect(_, 2, let error)) = $0 { return error.contains("Connection refused") }
                return false
            }
        })
        let sim = try SimulatorProbe(port: endpoint.port)
        defer { sim.simulator.stop() }
        #expect(device.waitRegistered())
        device.client.stop()
        #expect(device.client.state == .stopped)
    }

    @Test("malformed frames get errors; the connection survives when in step; other connections are untouched")
    func malformedFrames() throws {
        let sim = try SimulatorProbe()
        defer { sim.simulator.stop() }
        let device = DeviceProbe(sim.endpoint)
        defer { device.client.stop() }
        #expect(device.waitRegistered())

        let peer = try PushConnection(to: sim.endpoint)
        func reply(to text: String) throws -> PushFault? {
            try peer.sendRaw(rawFrame(text))
            if case .error(let fault) = try peer.receive() { return fault }
            return nil
        }
        #expect(try reply(to: "{not json")?.code == .malformedJSON)
        #expect(try reply(to: "")?.code == .malformedJSON)
        #expect(try reply(to: #"{"v":1,"type":"launch"}"#)?.code == .unknownType)
        #expect(try reply(to: #"{"v":7,"type":"status"}"#)?.message == "version 7 is not supported (supported: 1)")
        let good = String(decoding: PushCodec.encode(.send(pushRequest())), as: UTF8.self)
        let badKind = try reply(to: good.replacingOccurrences(of: #""kind":"generic""#, with: #""kind":"pager""#))
        #expect(badKind?.code == .badField)
        #expect(badKind?.path == "payload.handle.kind")
        #expect(try reply(to: #"{"v":1,"type":"push","id":"x","token":"t","payload":{}}"#)?.code == .badField)
        #expect(try peer.status().devices.count == 1)  // still in step, still served
        #expect(sim.waitForLog("malformed frame from #2 (127.0.0.1:"))

        // An oversize length: an error, then the connection is closed cleanly.
        let oversize = try PushConnection(to: sim.endpoint)
        try oversize.sendRaw(Data([0x00, 0x01, 0x00, 0x01]) + Data(repeating: 0x41, count: 1000))
        guard case .error(let tooLarge) = try oversize.receive() else {
            Issue.record("no error for an oversize frame")
            return
        }
        #expect(tooLarge.code == .frameTooLarge)
        #expect(tooLarge.message == "frame of 65537 bytes is over the 65536-byte limit")
        #expect(throws: PushConnectionError.closed) { try oversize.receive() }

        // Garbage: an HTTP request reads as an absurd length.
        let http = try PushConnection(to: sim.endpoint)
        try http.sendRaw(Data("GET / HTTP/1.1\r\nHost: x\r\n\r\n".utf8))
        if case .error(let fault) = try http.receive() { #expect(fault.code == .frameTooLarge) }
        #expect(throws: PushConnectionError.closed) { try http.receive() }

        // The device and the first connection did not notice.
        #expect(try peer.send(pushRequest()).reported == true)
        #expect(device.client.state.isRegistered)
        #expect(device.faults.isEmpty)
        #expect(sim.simulator.statusReport().counters.protocolErrors == 8)
    }

    @Test("a peer that never reads is closed when its outgoing queue overflows; others carry on")
    func slowConsumer() throws {
        let configuration = PushSimulator.Configuration(maxQueuedBytes: 16 * 1024, socketSendBufferSize: 4096)
        let sim = try SimulatorProbe(configuration: configuration)
        defer { sim.simulator.stop() }
        let device = DeviceProbe(sim.endpoint)
        defer { device.client.stop() }
        #expect(device.waitRegistered())

        let hog = try PushConnection(to: sim.endpoint)
        let status = try FrameEncoder().frame(.status)
        let burst = Data((0..<500).map { _ in status }.joined())
        var sentBursts = 0
        while sentBursts < 200, !sim.log.all.contains(where: { $0.contains("outgoing queue over") }) {
            do {
                try hog.sendRaw(burst, timeout: 2)
            } catch {
                break  // the simulator closed it
            }
            sentBursts += 1
        }
        #expect(sim.waitForLog("closed: outgoing queue over 16384 bytes: the peer is not reading"))
        #expect(try PushConnection(to: sim.endpoint).send(pushRequest()).reported == true)
        #expect(device.client.state.isRegistered)
    }

    @Test("not reported, then no ack in time: strikes; the token is disabled and the device told")
    func strikesOverTheWire() throws {
        let clock = ManualClock(start: Date())
        let rules = PushService.Configuration(maxFailures: 2, ackTimeout: 5)
        let sim = try SimulatorProbe(configuration: .init(service: rules), clock: clock)
        defer { sim.simulator.stop() }
        let release = DispatchSemaphore(value: 0)
        let device = DeviceProbe(sim.endpoint) { delivery in
            switch delivery.payload.callID {
            case "refuse": return .notReported("not today")
            case "slow":
                _ = release.wait(timeout: .now() + patience)
                return .reported
            default: return .reported
            }
        }
        defer { device.client.stop() }
        #expect(device.waitRegistered())
        let sender = try PushConnection(to: sim.endpoint)

        let refused = try sender.send(pushRequest(callID: "refuse", now: clock.now()))
        #expect(refused.reported == false)
        #expect(refused.detail.contains("not today"))
        #expect(refused.detail.contains("strike 1/2"))

        try sender.send(.send(pushRequest(callID: "slow", now: clock.now())))
        #expect(device.deliveries.wait { $0.count == 2 })
        #expect(sim.log.wait { _ in clock.pendingWakeUps >= 2 })  // the ack timer is set
        clock.advance(by: 5)
        guard case .outcome(let timedOut) = try sender.receive() else {
            Issue.record("no outcome after the ack timeout")
            return
        }
        #expect(timedOut.reported == false)
        #expect(timedOut.detail.contains("no ack within the ack timeout"))
        #expect(timedOut.detail.contains("token disabled"))
        #expect(sim.waitForLog("token d1 disabled after 2 strikes"))
        release.signal()  // the handler returns at last: its ack is stray, and the client reads the simulator's news
        #expect(device.events.wait { _ in device.faults.map(\.code) == [.tokenDisabled, .unknownPush] })
        #expect(device.client.state == .registered(PushRegistration(token: "d1", strikes: 0, disabled: true)))
        #expect(try sender.send(pushRequest(now: clock.now())).result == .tokenDisabled)
    }

    @Test("a handler that stops its client still gets its ack sent; a non-finite expiration is a bad field")
    func stopFromHandler() throws {
        let sim = try SimulatorProbe()
        defer { sim.simulator.stop() }
        let box = ClientBox()
        let client = PushDeviceClient(configuration: .init(endpoint: sim.endpoint, token: "d1")) { _ in
            box.client?.stop()
            return .reported
        }
        box.client = client
        client.start()
        let sender = try PushConnection(to: sim.endpoint)
        #expect(sim.waitForLog("registered token=d1"))
        #expect(try sender.send(pushRequest()).reported == true)
        #expect(sim.waitForLog("offline token=d1"))
        #expect(client.state == .stopped)

        var forever = pushRequest()
        forever.expiration = .infinity
        #expect(throws: PushConnectionError.self) { try sender.send(forever) }
        #expect(sim.waitForLog("expiration: expected a number"))
    }

    @Test("a push for an offline device is stored and delivered when it registers")
    func storedUntilRegistered() throws {
        let sim = try SimulatorProbe()
        defer { sim.simulator.stop() }
        let early = try PushConnection(to: sim.endpoint)
        guard case .registered = try early.request(.register(token: "d1")) else {
            Issue.record("no registered reply")
            return
        }
        early.close()
        #expect(sim.waitForLog("offline token=d1"))
        let sender = try PushConnection(to: sim.endpoint)
        let stored = try sender.send(pushRequest(callID: "while-away"))
        #expect(stored.result == .stored)
        let device = DeviceProbe(sim.endpoint)
        defer { device.client.stop() }
        #expect(device.deliveries.wait { $0.map(\.payload.callID) == ["while-away"] })
        #expect(sim.waitForLog("delivered push=p1 token=d1 reported=true"))
        #expect(try sender.status().devices.first?.queued == 0)
    }
}
