import CGStreamer
import Foundation

/// A camera of the machine, as GStreamer's device monitor names it (V4L2: its `/dev/videoN`).
public struct VideoDevice: Sendable, Hashable {
    /// What `v4l2src`'s `device` takes, and `camera:ID` names.
    public let id: String
    /// What people call it.
    public let name: String

    /// A camera.
    public init(id: String, name: String) {
        self.id = id
        self.name = name
    }

    /// The cameras GStreamer's device monitor sees now (empty without GStreamer or a camera). The monitor is started
    /// on first use and kept.
    public static func list() -> [VideoDevice] {
        guard GStreamer.failure == nil, let monitor = VideoDeviceMonitor.shared.monitor, let text = parley_video_devices(monitor) else {
            return []
        }
        defer { parley_gst_free(text) }
        return parse(String(cString: text))
    }

    /// The cameras of `parley_video_devices`' lines (pure).
    static func parse(_ text: String) -> [VideoDevice] {
        text.split(separator: "\n").compactMap { line in
            let fields = line.split(separator: "\t", maxSplits: 1, omittingEmptySubsequences: false).map(String.init)
            guard fields.count == 2, !fields[0].isEmpty else { return nil }
            return VideoDevice(id: fields[0], name: fields[1])
        }
    }
}

extension VideoSource {
    /// Why a call cannot send this now, or nil: a camera that is not among `cameras`, a file that cannot be read.
    public func problem(cameras: [VideoDevice]) -> String? {
        switch self {
        case .test: return nil
        case .camera(nil): return cameras.isEmpty ? "there is no camera" : nil
        case .camera(let device?): return cameras.contains { $0.id == device } ? nil : "there is no camera \(device)"
        case .file(let path):
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), !isDirectory.boolValue,
                FileManager.default.isReadableFile(atPath: path)
            else { return "there is no readable file \(path)" }
            return nil
        }
    }
}

/// The process's one started camera monitor.
// @unchecked Sendable: the pointer is set once; GstDeviceMonitor's calls lock themselves.
private final class VideoDeviceMonitor: @unchecked Sendable {
    static let shared = VideoDeviceMonitor()
    let monitor: UnsafeMutablePointer<GstDeviceMonitor>?
    private init() { monitor = GStreamer.failure == nil ? parley_video_device_monitor() : nil }
}
