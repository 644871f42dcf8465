import ControlProtocol
import Foundation

/// What carries a call's audio to a page (the node's media layer, docs/web-softphone.md "Audio in the browser").
public protocol BrowserAudioCarrier: AnyObject, Sendable {
    /// Answers the page's `offer` for `conversation`'s audio and hands the call's audio to it; `done` once, from any
    /// thread, with the answer or a refusal.
    func openBrowserAudio(
        _ conversation: UUID, offer: String, takeOver: Bool,
        done: @escaping @Sendable (Result<(answer: String, session: String), ControlError>) -> Void)
    /// Gives `conversation`'s audio back to its configured source and sink; `done` with whether a page had it.
    func endBrowserAudio(_ conversation: UUID, done: @escaping @Sendable (Bool) -> Void)
}

extension ControlService {
    /// Serves `browserAudio` and `browserAudioEnd` through `carrier` from now on.
    public func carryBrowserAudio(with carrier: any BrowserAudioCarrier) {
        browserAudio.withLock { $0 = carrier }
    }

    private func carrier() throws(ControlError) -> any BrowserAudioCarrier {
        guard let carrier = browserAudio.withLock({ $0 }) else {
            throw ControlError(.unavailable, "This parleyd does not carry calls' audio (it runs with --media off or external): no browser audio.")
        }
        return carrier
    }

    func openBrowserAudio(
        _ params: BrowserAudioParams, on uuid: UUID, id: ControlRequestID, reply: @escaping @Sendable (Data) -> Void
    ) throws(ControlError) {
        try carrier().openBrowserAudio(uuid, offer: params.sdp, takeOver: params.takeOver ?? false) { result in
            switch result {
            case .success(let answered):
                let result = BrowserAudioResult(conversation: uuid.uuidString, session: answered.session, sdp: answered.answer)
                reply(ControlMessage.result(result, id: id))
            case .failure(let error):
                reply(ControlMessage.error(error, id: id))
            }
        }
    }

    func endBrowserAudio(on uuid: UUID, id: ControlRequestID, reply: @escaping @Sendable (Data) -> Void) throws(ControlError) {
        try carrier().endBrowserAudio(uuid) { ended in
            reply(ControlMessage.result(BrowserAudioEnded(conversation: uuid.uuidString, ended: ended), id: id))
        }
    }
}
