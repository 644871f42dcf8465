import CGStreamer

/// An audio device of the desktop (a microphone or a speaker, as the sound server names it).
public struct AudioDevice: Sendable, Hashable {
    /// A source (capture) or a sink (playback).
    public enum Kind: String, Sendable, Hashable {
        case source, sink
    }

    public let kind: Kind
    /// The sound server's name for it, what a call's `device` is set to (PulseAudio: `alsa_output.…`).
    public let id: String
    /// What people call it.
    public let name: String
    /// Whether it is the server's default of its kind.
    public let isDefault: Bool

    /// A device.
    public init(kind: Kind, id: String, name: String, isDefault: Bool) {
        self.kind = kind
        self.id = id
        self.name = name
        self.isDefault = isDefault
    }

    /// The devices GStreamer's device monitor sees now (empty without GStreamer or a sound server). The monitor is
    /// started on first use and kept: GStreamer 1.22's PulseAudio provider says which device is the default only
    /// while it follows the server, and learns of a new default when the server's devices next change.
    public static func list() -> [AudioDevice] {
        guard GStreamer.failure == nil, let monitor = DeviceMonitor.shared.monitor, let text = parley_audio_devices(monitor) else { return [] }
        defer { parley_gst_free(text) }
        return parse(String(cString: text))
    }

    /// The devices of `parley_audio_devices`' lines (pure).
    static func parse(_ text: String) -> [AudioDevice] {
        text.split(separator: "\n").compactMap { line in
            let fields = line.split(separator: "\t", maxSplits: 3, omittingEmptySubsequences: false).map(String.init)
            guard fields.count == 4, let kind = Kind(rawValue: fields[0]), !fields[2].isEmpty else { return nil }
            return AudioDevice(kind: kind, id: fields[2], name: fields[3], isDefault: fields[1] == "1")
        }
    }
}

/// The process's one started device monitor.
// @unchecked Sendable: the pointer is set once; GstDeviceMonitor's calls lock themselves.
private final class DeviceMonitor: @unchecked Sendable {
    static let shared = DeviceMonitor()
    let monitor: UnsafeMutablePointer<GstDeviceMonitor>?
    private init() { monitor = GStreamer.failure == nil ? parley_audio_device_monitor() : nil }
}
