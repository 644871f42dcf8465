import Foundation
import Synchronization

/// Calls' media for a frontend that sends and receives the RTP itself (`parleyd --media external`): our descriptions
/// give the address and port the frontend named in `join` or `start`, and the negotiated session reaches it in
/// `mediaChanged` events; the engine touches no RTP. A call the frontend named nothing for offers the engine's
/// `mediaPort` on the node's address (the discard port in a node: no audio). Tones go as SIP INFO (the stream is not
/// ours to put RFC 4733 events in).
///
/// Endpoints are set from the control API's thread and taken on the engine's loop, so they sit behind a lock; each
/// is taken once, by the call's first description, and one never taken (the action failed before any description)
/// is dropped by ``forget(_:)``.
public final class ExternalMedia: CallMediaHandler, Sendable {
    private let endpoints = Mutex<[UUID: MediaEndpoint]>([:])
    /// The video ports frontends named, kept for their call's life (an upgrade asks again).
    private let videoPorts = Mutex<[UUID: Int]>([:])

    /// A handler with no endpoints yet.
    public init() {}

    /// Where the frontend receives `conversation`'s RTP (set before the `join` or `start` that describes it).
    public func setEndpoint(_ endpoint: MediaEndpoint, for conversation: UUID) {
        endpoints.withLock { $0[conversation] = endpoint }
        if let port = endpoint.videoPort { videoPorts.withLock { $0[conversation] = port } }
    }

    /// Drops an endpoint no description took (its action failed or was refused).
    public func forget(_ conversation: UUID) {
        endpoints.withLock { _ = $0.removeValue(forKey: conversation) }
        videoPorts.withLock { _ = $0.removeValue(forKey: conversation) }
    }

    /// A frontend carries video where it named a video port.
    public var carriesVideo: Bool { true }

    /// The video port the call's frontend named, if it named one.
    public func videoPort(for conversation: UUID) -> Int? { videoPorts.withLock { $0[conversation] } }

    /// The negotiated video reaches the frontend in `mediaChanged`.
    public func videoChanged(_ video: NegotiatedVideo?, for conversation: UUID) {}

    public func releaseVideo(of conversation: UUID) { videoPorts.withLock { _ = $0.removeValue(forKey: conversation) } }

    /// How many endpoints wait for their call's first description.
    public var waitingEndpoints: Int { endpoints.withLock { $0.count } }

    public func reserveEndpoint(for conversation: UUID) -> MediaEndpoint? {
        endpoints.withLock { $0.removeValue(forKey: conversation) }
    }

    public func releaseEndpoint(_ endpoint: MediaEndpoint, of conversation: UUID) {}

    public var sendsTonesInStream: Bool { false }

    public func audioChanged(_ audio: NegotiatedAudio?, for conversation: UUID) {}

    public func muteChanged(_ muted: Bool, for conversation: UUID) {}

    public func sendTones(_ digits: String, for conversation: UUID) {}
}
