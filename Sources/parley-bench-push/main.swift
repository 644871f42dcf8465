import ConversationKit
import Foundation
import ParleyEngine
import ParleyNode
import SIPTransport
import VoIPPush

/// `parley-bench-push [PUSHES]`: push-to-reported latency on loopback. A push simulator, and two devices registered
/// with it: "engine", a `ParleyNode` (the daemon's path: the conversation is ringing before the push handler
/// returns), and "bare", whose handler acknowledges at once (the baseline: the simulator and the channel alone). A sender sends PUSHES pushes to each, one at a time, and times each from send
/// to the sender's `delivered, reported` outcome. The last line is `push_p99_ms: X` (the engine device's p99).
let pushes = CommandLine.arguments.count > 1 ? max(100, Int(CommandLine.arguments[1]) ?? 10_000) : 10_000

let simulator = try PushSimulator(listeningOn: PushEndpoint("127.0.0.1:0")!, log: { _ in })

/// The engine device: a node as parleyd runs one (no history, no control endpoint), taking pushes as "engine".
let node = try ParleyNode(configuration: NodeConfiguration(
    listen: [ListenAddress(kind: .udp, host: "127.0.0.1", port: 0)], recordsHistory: false, pushService: simulator.endpoint,
    pushToken: "engine", pushInviteWait: .milliseconds(200), control: false,
    manager: .init(includesConversationInRecents: false)))
let registered = DispatchSemaphore(value: 0)
node.observePushState { if $0.isRegistered { registered.signal() } }
node.start()
guard registered.wait(timeout: .now() + 10) == .success else { fatalError("the node did not register: \(String(describing: node.pushState))") }

/// The baseline device: acknowledges at once.
let bareRegistered = DispatchSemaphore(value: 0)
let bareDevice = PushDeviceClient(
    configuration: .init(endpoint: simulator.endpoint, token: "bare"),
    onEvent: { if case .stateChanged(let state) = $0, state.isRegistered { bareRegistered.signal() } },
    handler: { _ in .reported })
bareDevice.start()
guard bareRegistered.wait(timeout: .now() + 10) == .success else { fatalError("device bare did not register") }

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
let reportedConversations = node.manager.conversations.count
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
bareDevice.stop()
node.stop()
simulator.stop()
