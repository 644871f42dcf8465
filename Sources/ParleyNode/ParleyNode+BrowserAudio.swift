import ControlProtocol
import Foundation
import ParleyControl
import ParleyEngine
import ParleyIO
import Media

extension ParleyNode {
    /// Lets the control API hand calls' audio to pages (`browserAudio`), and tells its subscribers how each page's
    /// audio stands (`browserAudioChanged`, through the engine's events).
    static func carryBrowserAudio(_ audio: CallAudio, for service: ControlService?, engine: ParleyEngine, loop: EventLoop) {
        audio.onBrowserAudio = { [weak engine] conversation, session, state, reason in
            engine?.browserAudioChanged(session: session, state: state, reason: reason, for: conversation)
        }
        audio.onAudioRoute = { [weak engine] conversation, source, sink, reason in
            engine?.audioRouteChanged(conversation, source: source, sink: sink, reason: reason)
        }
        let route = BrowserAudioRoute(audio, loop: loop)
        service?.carryBrowserAudio(with: route)
        service?.chooseAudioDevices(with: route)
        audio.isConversationLive = { [weak engine] in engine?.manager.conversation($0) != nil }
        if audio.carriesVideo { service?.chooseVideoSources(with: VideoSourceRoute(audio, loop: loop)) }
    }
}

/// The control API's way to a node's calls' audio: each request hops onto the node's loop, where CallAudio lives.
// @unchecked Sendable: `audio` is read only on `loop` (every method hops there first).
final class BrowserAudioRoute: BrowserAudioCarrier, AudioDeviceChooser, @unchecked Sendable {
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

    func audioDevices(done: @escaping @Sendable ([AudioDeviceInfo]) -> Void) {
        DispatchQueue.global().async {
            done(AudioDevice.list().map { AudioDeviceInfo(kind: $0.kind.rawValue, id: $0.id, name: $0.name, isDefault: $0.isDefault) })
        }
    }

    func chooseDevices(_ conversation: UUID, source: String?, sink: String?, done: @escaping @Sendable (ControlError?) -> Void) {
        loop.execute { [self] in
            guard let audio else { return done(ControlError(.unavailable, "parleyd is stopping.")) }
            audio.chooseDevices(conversation, source: source, sink: sink) { result in
                switch result {
                case .success: done(nil)
                case .failure(.noAudio): done(ControlError(.refused, "The call has no audio now."))
                case .failure(.notOnDevices):
                    done(ControlError(.refused, "The call does not play on the desktop's devices (its audio is a file, a tone, a browser, or there is no PulseAudio)."))
                case .failure(.unknown(let what)): done(ControlError(.invalidParams, "There is \(what) (see audioDevices)."))
                }
            }
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
