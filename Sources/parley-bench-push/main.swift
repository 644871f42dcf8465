import ConversationKit
import Foundation
import ParleyEngine
import ParleyIO
import SIPTransport
import VoIPPush

/// `parley-bench-push [PUSHES]`: push-to-reported latency on loopback. A push simulator, and two devices registered
/// with it: "engine", whose handler reports each push to a `ParleyEngine` (the daemon's path: the conversation is
/// ringing before the handler returns), and "bare", whose handler acknowledges at once (the baseline: the
/// simulator and the channel alone). A sender sends PUSHES pushes to each, one at a time, and times each from send
/// to the sender's `delivered, reported` outcome. The last line is `push_p99_ms: X` (the engine device's p99).
let pushes = CommandLine.arguments.count > 1 ? max(100, Int(CommandLine.arguments[1]) ?? 10_000) : 10_000

let simulator = try PushSimulator(listeningOn: PushEndpoint("127.0.0.1:0")!, log: { _ in })
let loop = try EventLoop(name: "bench-engine")
let environment = LoopEnvironment(loop: loop)
let manager = try ConversationManager(configuration: .init(includesConversationInRecents: false))
let engine = ParleyEngine(
    configuration: EngineConfiguration(
        listenAddresses: [ListenAddress(kind: .udp, host: "127.0.0.1", port: 5070)], pushInviteWait: .milliseconds(200)),
    manager: manager, environment: environment)

func device(_ token: String, handler: @escaping @Sendable (PushDelivery) -> PushAck) -> PushDeviceClient {
    let client = PushDeviceClient(configuration: .init(endpoint: simulator.endpoint, token: token), handler: handler)
    client.start()
    let deadline = Date().addingTimeInterval(10)
    while !client.state.isRegistered {
        guard Date() < deadline else { fatalError("device \(token) did not register: \(client.state)") }
        usleep(5_000)
    }
    return client
}

let engineDevice = device("engine") { delivery in
    let payload = delivery.payload
    let handling = engine.handlePush(PushedCall(
        uuid: payload.uuid, handle: payload.handle, callID: payload.callID, isVideo: payload.isVideo,
        expiresAt: payload.expiresAt, isCancel: payload.cancel))
    return PushAck(reported: handling.reported)
}
let bareDevice = device("bare") { _ in .reported }

/// Sends `count` pushes to `token` one at a time; returns each latency in milliseconds and the elapsed seconds.
func run(token: String, count: Int) throws -> (latencies: [Double], seconds: Double) {
    let sender = try PushConnection(to: simulator.endpoint)
    defer { sender.close() }
    var latencies: [Double] = []
    latencies.reserveCapacity(count)
    let started = ContinuousClock.now
    for index in 0..<count {
        let now = Date()
        let payload = PushPayload(
            uuid: UUID(), handle: Handle(kind: .phoneNumber, value: "+1415555\(String(format: "%04d", index % 10_000))"),
            callID: "\(token)-\(index)@bench", isVideo: false, sentAt: now, expiresAt: now.addingTimeInterval(30))
        let begin = ContinuousClock.now
        let outcome = try sender.send(PushSendRequest(token: token, payload: payload))
        let elapsed = ContinuousClock.now - begin
        guard outcome.result == .delivered, outcome.reported == true else {
            fatalError("push \(index) to \(token): \(outcome)")
        }
        latencies.append(Double(elapsed.components.attoseconds) / 1e15 + Double(elapsed.components.seconds) * 1e3)
    }
    let total = ContinuousClock.now - started
    return (latencies, Double(total.components.seconds) + Double(total.components.attoseconds) / 1e18)
}

func percentile(_ sorted: [Double], _ p: Double) -> Double {
    sorted[min(sorted.count - 1, Int((Double(sorted.count) * p).rounded(.up)) - 1)]
}

_ = try run(token: "engine", count: 200)  // warm-up
_ = try run(token: "bare", count: 200)
let measured = try run(token: "engine", count: pushes)
let baseline = try run(token: "bare", count: pushes)
let reportedConversations = manager.conversations.count
for (name, result) in [("engine", measured), ("bare (baseline)", baseline)] {
    let sorted = result.latencies.sorted()
    print(String(
        format: "%-16@ pushes %6d  p50 %.3f ms  p99 %.3f ms  max %.3f ms  %.0f pushes/s", name as NSString,
        sorted.count, percentile(sorted, 0.5), percentile(sorted, 0.99), sorted.last!, Double(sorted.count) / result.seconds))
}
let p99 = percentile(measured.latencies.sorted(), 0.99)
let baseP99 = percentile(baseline.latencies.sorted(), 0.99)
print("conversations still ringing at the end (each ends 200 ms after its push): \(reportedConversations)")
print(String(format: "ratio_p99_engine_to_bare: %.2f", p99 / baseP99))
print(String(format: "push_p99_ms: %.3f", p99))
engineDevice.stop()
bareDevice.stop()
simulator.stop()
loop.shutdown()
