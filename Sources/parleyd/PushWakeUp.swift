import ConversationKit
import Foundation
import ParleyEngine
import VoIPPush

/// parleyd's device side of the VoIP push channel: registers its token with the push simulator (reconnecting with
/// back-off), and for each push reports the incoming conversation to the engine before the handler returns — the
/// handler's return value is the acknowledgement the simulator counts strikes by.
final class PushWakeUp: Sendable {
    private let client: PushDeviceClient

    init(endpoint: PushEndpoint, token: String, engine: ParleyEngine, log: EngineLog) {
        client = PushDeviceClient(
            configuration: .init(endpoint: endpoint, token: token),
            onEvent: { event in
                switch event {
                case .stateChanged(let state): log.info("push channel: \(state)")
                case .fault(let fault): log.error("push channel: the simulator says \(fault)")
                case .acknowledged: break
                case .ignored(let what): log.debug("push channel: ignored \(what)")
                }
            },
            handler: { delivery in
                let payload = delivery.payload
                // Synchronous all the way: the conversation is ringing before this closure returns.
                let handling = engine.handlePush(PushedCall(
                    uuid: payload.uuid, handle: payload.handle, callID: payload.callID, isVideo: payload.isVideo,
                    expiresAt: payload.expiresAt, isCancel: payload.cancel))
                log.info("push \(delivery.id) for call-id \(payload.callID): \(handling)")
                return PushAck(reported: handling.reported, reason: "\(handling)")
            })
    }

    /// Connects and registers (and keeps doing so until ``stop()``).
    func start() { client.start() }

    /// Disconnects for good.
    func stop() { client.stop() }
}
