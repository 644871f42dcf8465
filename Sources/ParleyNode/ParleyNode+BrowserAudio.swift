import ControlProtocol
import Foundation
import ParleyControl
import ParleyEngine
import ParleyIO

extension ParleyNode {
    /// Lets the control API hand calls' audio to pages (`browserAudio`), and tells its subscribers how each page's
    /// audio stands (`browserAudioChanged`, through the engine's events).
    static func carryBrowserAudio(_ audio: CallAudio, for service: ControlService?, engine: ParleyEngine, loop: EventLoop) {
        audio.onBrowserAudio = { [weak engine] conversation, session, state, reason in
            engine?.browserAudioChanged(session: session, state: state, reason: reason, for: conversation)
        }
        service?.carryBrowserAudio(with: BrowserAudioRoute(audio, loop: loop))
    }
}

/// The control API's way to a node's calls' audio: each request hops onto the node's loop, where CallAudio lives.
// @unchecked Sendable: `audio` is read only on `loop` (every method hops there first).
final class BrowserAudioRoute: BrowserAudioCarrier, @unchecked Sendable {
    private weak var audio: CallAudio?
    private let loop: EventLoop

    init(_ audio: CallAudio, loop: EventLoop) {
        self.audio = audio
        self.loop = loop
    }

    func openBrowserAudio(
        _ conversation: UUID, offer: String, takeOver: Bool, done: @escaping @Sendable (Result<(answer: String, session: String), ControlError>) -> Void
    ) {
        loop.execute { [self] in
            guard let audio else { return done(.failure(ControlError(.unavailable, "parleyd is stopping."))) }
            audio.openBrowserAudio(conversation, offer: offer, takeOver: takeOver) { result in
                done(result.mapError(Self.controlError))
            }
        }
    }

    func endBrowserAudio(_ conversation: UUID, done: @escaping @Sendable (Bool) -> Void) {
        loop.execute { [self] in
            done(audio?.endBrowserAudio(conversation, reason: "the page gave it back") ?? false)
        }
    }

    private static func controlError(_ refusal: BrowserAudioRefusal) -> ControlError {
        switch refusal {
        case .noAudio(let why): ControlError(.refused, "No browser audio: \(why).")
        case .taken: ControlError(.refused, "Another page carries this call's audio (ask with takeOver to take it).")
        case .offer(let why): ControlError(.invalidParams, "The offer cannot be answered: \(why).", field: "sdp")
        }
    }
}
