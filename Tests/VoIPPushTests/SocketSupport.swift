import ConversationKit
import Dispatch
import Foundation
import Synchronization
import Testing

@testable import VoIPPush
import ParleyTestSupport

/// The longest any test waits for something that should happen at once on loopback, in seconds.
let patience: TimeInterval = 5

/// The shared recorder, under the name these tests know it by.
typealias Recorder = EventRecorder

/// A simulator on an ephemeral loopback port whose log lines go to a recorder.
struct SimulatorProbe {
    let simulator: PushSimulator
    let log = Recorder<String>()

    init(
        host: String = "127.0.0.1", port: UInt16 = 0, configuration: PushSimulator.Configuration = .init(),
        clock: any ConversationClock = SystemClock()
    ) throws {
        let log = self.log
        simulator = try PushSimulator(
            listeningOn: PushEndpoint(host: host, port: port)!, configuration: configuration, clock: clock
        ) { log.record($0) }
    }

    var endpoint: PushEndpoint { simulator.endpoint }

    /// Waits for a log line containing `text`.
    func waitForLog(_ text: String, count: Int = 1) -> Bool {
        log.wait { lines in lines.filter { $0.contains(text) }.count >= count }
    }
}

/// A device client whose pushes and events go to recorders.
final class DeviceProbe: Sendable {
    let client: PushDeviceClient
    let deliveries = Recorder<PushDelivery>()
    let events = Recorder<PushDeviceClient.Event>()

    init(
        _ endpoint: PushEndpoint, token: String = "d1", backoff: PushBackoff = PushBackoff(),
        answer: @escaping @Sendable (PushDelivery) -> PushAck = { _ in .reported }
    ) {
        let deliveries = self.deliveries, events = self.events
        client = PushDeviceClient(
            configuration: .init(endpoint: endpoint, token: token, backoff: backoff),
            onEvent: { events.record($0) },
            handler: { delivery in
                deliveries.record(delivery)
                return answer(delivery)
            })
        client.start()
    }

    /// Waits until the client has registered `count` times in all.
    func waitRegistered(count: Int = 1) -> Bool {
        events.wait { events in
            events.filter {
                if case .stateChanged(.registered) = $0 { return true }
                return false
            }.count >= count
        }
    }

    /// The faults the simulator sent.
    var faults: [PushFault] {
        events.all.compactMap {
            if case .fault(let fault) = $0 { return fault }
            return nil
        }
    }

    deinit { client.stop() }
}

/// A send request for `token`, sent now (by `clock`) and valid for a minute.
func pushRequest(
    _ token: String = "d1", callID: String = "call-1", now: Date = Date(), cancel: Bool = false
) -> PushSendRequest {
    PushSendRequest(
        token: token,
        payload: PushPayload(
            handle: Handle(kind: .generic, value: "sip:alice@127.0.0.1:5062", displayName: "Alice"), callID: callID,
            isVideo: false, sentAt: now, expiresAt: now.addingTimeInterval(60), cancel: cancel))
}

/// A frame around raw text.
func rawFrame(_ text: String) -> Data {
    (try? FrameEncoder().frame(Data(text.utf8))) ?? Data()
}

/// Whether this machine has an IPv6 loopback to bind.
let ipv6LoopbackAvailable: Bool = {
    guard let simulator = try? PushSimulator(listeningOn: PushEndpoint("[::1]:0")!, log: { _ in }) else { return false }
    simulator.stop()
    return true
}()

/// Lets a handler reach the client it belongs to.
final class ClientBox: Sendable {
    private let stored = Mutex<PushDeviceClient?>(nil)
    var client: PushDeviceClient? {
        get { stored.withLock { $0 } }
        set { stored.withLock { $0 = newValue } }
    }
}
