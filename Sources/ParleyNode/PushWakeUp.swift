import ConversationKit
import Foundation
import ParleyEngine
import ParleyIO
import Synchronization
import VoIPPush

/// A node's device side of the VoIP push channel: registers its token with the push simulator (reconnecting with
/// back-off), and for each push reports the incoming conversation to the engine before the handler returns — the
/// handler's return value is the acknowledgement the simulator counts strikes by.
final class PushWakeUp: Sendable {
    private let client: PushDeviceClient
    private let observers = StateObservers()

    init(endpoint: PushEndpoint, token: String, engine: ParleyEngine, loop: EventLoop, log: EngineLog) {
        client = PushDeviceClient(
            configuration: .init(endpoint: endpoint, token: token, loop: loop),
            onEvent: { [observers] event in
                switch event {
                case .stateChanged(let state):
                    log.info("push channel: \(state)")
                    for observer in observers.list.withLock({ $0 }) { observer(state) }
                case .fault(let fault): log.error("push channel: the simulator says \(fault)")
                case .acknowledged: break
                case .ignored(let what): log.debug("push channel: ignored \(what)")
                }
            },
            handler: { delivery in
                // Synchronous all the way: the conversation is ringing before this closure returns.
                let handling = engine.handlePush(PushedCall(delivery.payload))
                log.info("push \(delivery.id) for call-id \(delivery.payload.callID): \(handling)")
                return PushAck(reported: handling.reported, reason: "\(handling)")
            })
    }

    /// Connects and registers (and keeps doing so until ``stop()``).
    func start() { client.start() }

    /// Disconnects for good.
    func stop() { client.stop() }

    /// Where the push client is.
    var state: PushDeviceClient.State { client.state }

    /// Calls `observer` with every state the client enters.
    func observe(_ observer: @escaping @Sendable (PushDeviceClient.State) -> Void) {
        observers.list.withLock { $0.append(observer) }
    }
}

/// Who hears of the push client's states.
private final class StateObservers: Sendable {
    let list = Mutex<[@Sendable (PushDeviceClient.State) -> Void]>([])
}

extension PushedCall {
    /// What a push's payload announces, as the engine takes it.
    public init(_ payload: PushPayload) {
        self.init(
            uuid: payload.uuid, handle: payload.handle, callID: payload.callID, isVideo: payload.isVideo,
            expiresAt: payload.expiresAt, isCancel: payload.cancel)
    }
}
