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

/// The desktop's audio devices for calls (the node's media layer, docs/desktop.md "Devices").
public protocol AudioDeviceChooser: AnyObject, Sendable {
    /// The devices the sound server has now; `done` from any thread.
    func audioDevices(done: @escaping @Sendable ([AudioDeviceInfo]) -> Void)
    /// Plays `conversation` on `source` and `sink` (nil: the default); `done` once, from any thread.
    func chooseDevices(
        _ conversation: UUID, source: String?, sink: String?, done: @escaping @Sendable (ControlError?) -> Void)
}

extension ControlService {
    /// Serves `browserAudio` and `browserAudioEnd` through `carrier` from now on.
    public func carryBrowserAudio(with carrier: any BrowserAudioCarrier) {
        browserAudio.withLock { $0 = carrier }
    }

    /// Serves `audioDevices` and `setAudioDevice` through `chooser` from now on.
    public func chooseAudioDevices(with chooser: any AudioDeviceChooser) {
        deviceChooser.withLock { $0 = chooser }
    }

    func serveAudioDevices(id: ControlRequestID, reply: @escaping @Sendable (Data) -> Void) {
        guard let chooser = deviceChooser.withLock({ $0 }) else {
            return reply(ControlMessage.result(AudioDevicesResult(devices: []), id: id))
        }
        chooser.audioDevices { devices in reply(ControlMessage.result(AudioDevicesResult(devices: devices), id: id)) }
    }

    func setAudioDevice(_ params: SetAudioDeviceParams, on uuid: UUID, id: ControlRequestID, reply: @escaping @Sendable (Data) -> Void) throws(ControlError) {
        guard let chooser = deviceChooser.withLock({ $0 }) else {
            throw ControlError(.unavailable, "This parleyd does not carry calls' audio (it runs with --media off or external): no devices.")
        }
        chooser.chooseDevices(uuid, source: params.source, sink: params.sink) { error in
            if let error { return reply(ControlMessage.error(error, id: id)) }
            reply(ControlMessage.result(AudioDeviceChoice(conversation: uuid.uuidString, source: params.source, sink: params.sink), id: id))
        }
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
