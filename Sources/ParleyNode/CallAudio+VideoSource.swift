import ControlProtocol
import Foundation
import Media
import ParleyControl
import ParleyIO

/// Why a call's video source could not be picked.
enum VideoSourceRefusal: Error {
    /// This node does not carry calls' video (no `--video`, or GStreamer without VP8).
    case noVideo
    /// The call ended meanwhile.
    case gone
    /// The node is stopping.
    case stopping
    /// The source cannot be sent: no such camera, no readable file, a file outside `--video-files`.
    case unusable(String)
}

/// A call's video source picked by a frontend (`setVideoSource`, docs/media.md "Choosing a call's video source"):
/// remembered for the call's life, sent by every upgrade; a session already running changes to it at once.
extension CallAudio {
    /// Sends `source` (nil: the node's `--video-source`) in `conversation`'s video; `done` on the loop with the source
    /// the call sends now, or why not. Cameras are looked for off the loop (the device monitor may take a while);
    /// back on the loop the call must still be live (``isConversationLive``: a choice for a call gone would stay).
    /// A file must be a regular one in the `--video-files` folder; `camera` is the first camera listed.
    func chooseVideoSource(
        _ conversation: UUID, _ source: VideoSource?, done: @escaping @Sendable (Result<VideoSource, VideoSourceRefusal>) -> Void
    ) {
        guard carriesVideo, let video = configuration.video else { return done(.failure(.noVideo)) }
        var source = source
        if case .file(let path) = source {
            switch Self.pickable(path, in: video.pickableFiles) {
            case .failure(let problem): return done(.failure(.unusable(problem.why)))
            case .success(let resolved): source = .file(path: resolved)
            }
        }
        let me = LoopWeak(self, identity: loop.identity)
        DispatchQueue.global().async { [loop, source] in
            var source = source
            if let chosen = source {
                let cameras = chosen.isCamera ? VideoDevice.list() : []
                if let problem = chosen.problem(cameras: cameras) { return done(.failure(.unusable(problem))) }
                if case .camera(nil) = chosen, let first = cameras.first { source = .camera(device: first.id) }
            }
            loop.execute { [source] in
                guard let self = me.value else { return done(.failure(.stopping)) }
                guard self.isConversationLive?(conversation) ?? true else { return done(.failure(.gone)) }
                let configured = video.source
                self.chosenVideoSources[conversation] = source
                let sent = source ?? configured
                self.videoCalls[conversation]?.session?.change(source: sent)
                self.log.info("\(conversation): video source \(sent)\(source == nil ? " (parleyd's)" : "")")
                done(.success(sent))
            }
        }
    }
}

extension CallAudio {
    /// The file a control client may have a call send at `path` (relative: in `folder`), symbolic links resolved
    /// (what GStreamer opens is what was checked), or why not: it must be a regular file (not a FIFO that would block
    /// the pipeline, not a device) inside `folder` (`--video-files`; nil: no file at all).
    static func pickable(_ path: String, in folder: String?) -> Result<String, FileRefusal> {
        guard let folder else { return .failure(FileRefusal(why: "this parleyd lets frontends send no file (start it with --video-files DIR)")) }
        let root = URL(fileURLWithPath: folder).resolvingSymlinksInPath().path
        let named = path.hasPrefix("/") ? URL(fileURLWithPath: path) : URL(fileURLWithPath: root).appendingPathComponent(path)
        let resolved = named.resolvingSymlinksInPath().path
        guard resolved.hasPrefix(root.hasSuffix("/") ? root : root + "/") else {
            return .failure(FileRefusal(why: "\(path) is not in the --video-files folder"))
        }
        let kind = (try? FileManager.default.attributesOfItem(atPath: resolved))?[.type] as? FileAttributeType
        guard kind == .typeRegular, FileManager.default.isReadableFile(atPath: resolved) else {
            return .failure(FileRefusal(why: "there is no readable file \(path)"))
        }
        return .success(resolved)
    }

    /// Why a file cannot be sent.
    struct FileRefusal: Error {
        let why: String
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
                case .failure(.gone): done(.failure(ControlError(.notFound, "The call ended.")))
                case .failure(.stopping): done(.failure(ControlError(.unavailable, "parleyd is stopping.")))
                case .failure(.unusable(let why)):
                    let hint = parsed?.isCamera == true ? " (see videoDevices)" : ""
                    done(.failure(ControlError(.invalidParams, "source: \(why)\(hint).", field: "source")))
                }
            }
        }
    }
}
