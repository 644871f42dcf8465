import ControlProtocol
import Foundation
import Media
import ParleyControl
import ParleyIO

/// Why a call's video source could not be picked.
enum VideoSourceRefusal: Error {
    /// This node does not carry calls' video (no `--video`, or GStreamer without VP8).
    case noVideo
    /// The source cannot be sent: no such camera, no readable file.
    case unusable(String)
}

/// A call's video source picked by a frontend (`setVideoSource`, docs/media.md "Choosing a call's video source"):
/// remembered for the call's life, sent by every upgrade; a session already running changes to it at once.
extension CallAudio {
    /// Sends `source` (nil: the node's `--video-source`) in `conversation`'s video; `done` on the loop with the source
    /// the call sends now, or why not. Cameras are looked for off the loop (the device monitor may take a while).
    func chooseVideoSource(
        _ conversation: UUID, _ source: VideoSource?, done: @escaping @Sendable (Result<VideoSource, VideoSourceRefusal>) -> Void
    ) {
        guard carriesVideo, let configured = configuration.video?.source else { return done(.failure(.noVideo)) }
        let me = LoopWeak(self, identity: loop.identity)
        DispatchQueue.global().async { [loop] in
            if let source, let problem = source.problem(cameras: source.isCamera ? VideoDevice.list() : []) {
                return done(.failure(.unusable(problem)))
            }
            loop.execute {
                guard let self = me.value else { return done(.failure(.noVideo)) }
                self.chosenVideoSources[conversation] = source
                let sent = source ?? configured
                self.videoCalls[conversation]?.session?.change(source: sent)
                self.log.info("\(conversation): video source \(sent)\(source == nil ? " (parleyd's)" : "")")
                done(.success(sent))
            }
        }
    }
}

extension VideoSource {
    /// Whether it is a camera (looked for among the machine's).
    var isCamera: Bool {
        if case .camera = self { return true }
        return false
    }
}

/// The control API's way to calls' video sources: each pick hops onto the node's loop, where CallAudio lives.
// @unchecked Sendable: `audio` is read only on `loop`.
final class VideoSourceRoute: VideoSourceChooser, @unchecked Sendable {
    private weak var audio: CallAudio?
    private let loop: EventLoop

    init(_ audio: CallAudio, loop: EventLoop) {
        self.audio = audio
        self.loop = loop
    }

    func videoDevices(done: @escaping @Sendable ([VideoDeviceInfo]) -> Void) {
        DispatchQueue.global().async { done(VideoDevice.list().map { VideoDeviceInfo(id: $0.id, name: $0.name) }) }
    }

    func chooseVideoSource(_ conversation: UUID, source: String?, done: @escaping @Sendable (Result<String, ControlError>) -> Void) {
        let parsed: VideoSource?
        do {
            parsed = try source.map(VideoSource.init(parsing:))
        } catch {
            return done(.failure(ControlError(.invalidParams, "source: \(error.message).", field: "source")))
        }
        loop.execute { [self] in
            guard let audio else { return done(.failure(ControlError(.unavailable, "parleyd is stopping."))) }
            audio.chooseVideoSource(conversation, parsed) { result in
                switch result {
                case .success(let sent): done(.success(sent.description))
                case .failure(.noVideo): done(.failure(ControlError(.refused, "This parleyd does not carry calls' video.")))
                case .failure(.unusable(let why)): done(.failure(ControlError(.invalidParams, "source: \(why) (see videoDevices).", field: "source")))
                }
            }
        }
    }
}
