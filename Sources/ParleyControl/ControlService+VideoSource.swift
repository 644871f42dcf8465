import ControlProtocol
import Foundation

/// The machine's cameras and calls' video sources (the node's media layer, docs/media.md "Choosing a call's video
/// source").
public protocol VideoSourceChooser: AnyObject, Sendable {
    /// The cameras the machine has now; `done` from any thread.
    func videoDevices(done: @escaping @Sendable ([VideoDeviceInfo]) -> Void)
    /// Sends `source` (its text form; nil: parleyd's) in `conversation`'s video; `done` once, from any thread, with
    /// the source sent now or a refusal.
    func chooseVideoSource(_ conversation: UUID, source: String?, done: @escaping @Sendable (Result<String, ControlError>) -> Void)
}

extension ControlService {
    /// Serves `videoDevices` and `setVideoSource` through `chooser` from now on.
    public func chooseVideoSources(with chooser: any VideoSourceChooser) {
        videoChooser.withLock { $0 = chooser }
    }

    func serveVideoDevices(id: ControlRequestID, reply: @escaping @Sendable (Data) -> Void) {
        guard let chooser = videoChooser.withLock({ $0 }) else {
            return reply(ControlMessage.result(VideoDevicesResult(devices: []), id: id))
        }
        chooser.videoDevices { devices in reply(ControlMessage.result(VideoDevicesResult(devices: devices), id: id)) }
    }

    func setVideoSource(_ params: SetVideoSourceParams, on uuid: UUID, id: ControlRequestID, reply: @escaping @Sendable (Data) -> Void) throws(ControlError) {
        guard let chooser = videoChooser.withLock({ $0 }) else {
            throw ControlError(.refused, "This parleyd does not carry calls' video (it runs without --video, with --media off or external, or its GStreamer has no VP8).")
        }
        chooser.chooseVideoSource(uuid, source: params.source) { result in
            switch result {
            case .success(let source):
                reply(ControlMessage.result(VideoSourceChoice(conversation: uuid.uuidString, source: source, chosen: params.source != nil), id: id))
            case .failure(let error):
                reply(ControlMessage.error(error, id: id))
            }
        }
    }
}
