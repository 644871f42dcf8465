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
    /// Whether it is the sound server's echo canceller (a source whose capture is already cleaned of what is played):
    /// PulseAudio's module-echo-cancel (a `filter` device named `….echo-cancel` or described "echo cancelled with …")
    /// or PipeWire's `echo-cancel-source`. Jami's test is the module's driver, which GStreamer does not hand on.
    public let isEchoCanceller: Bool

    /// A device.
    public init(kind: Kind, id: String, name: String, isDefault: Bool, isEchoCanceller: Bool = false) {
        self.kind = kind
        self.id = id
        self.name = name
        self.isDefault = isDefault
        self.isEchoCanceller = isEchoCanceller
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
            let fields = line.split(separator: "\t", maxSplits: 4, omittingEmptySubsequences: false).map(String.init)
            guard fields.count == 5, let kind = Kind(rawValue: fields[0]), !fields[2].isEmpty else { return nil }
            let (id, deviceClass, name) = (fields[2], fields[3], fields[4])
            return AudioDevice(
                kind: kind, id: id, name: name, isDefault: fields[1] == "1",
                isEchoCanceller: kind == .source && isEchoCanceller(id: id, deviceClass: deviceClass, name: name))
        }
    }

    /// Whether a source of this name, class and description is the server's echo canceller (pure). A monitor is not,
    /// whatever its name (module-echo-cancel's sink has one, `….echo-cancel.monitor`).
    static func isEchoCanceller(id: String, deviceClass: String, name: String) -> Bool {
        guard deviceClass != "monitor" else { return false }
        let id = id.lowercased(), name = name.lowercased()
        let named = id.hasSuffix(".echo-cancel") || id.hasPrefix("echo-cancel") || id.contains("echo_cancel")
        return named || (deviceClass == "filter" && (name.contains("echo cancelled") || name.contains("echo-cancel")))
    }

    /// Whether a call capturing from `chosen` (nil: the default source) lands on the server's echo canceller.
    public static func capturesFromEchoCanceller(chosen: String?, in devices: [AudioDevice] = list()) -> Bool {
        let sources = devices.filter { $0.kind == .source }
        let capture = chosen.flatMap { id in sources.first { $0.id == id } } ?? (chosen == nil ? sources.first { $0.isDefault } : nil)
        return capture?.isEchoCanceller ?? false
    }
}

/// The process's one started device monitor.
// @unchecked Sendable: the pointer is set once; GstDeviceMonitor's calls lock themselves.
private final class DeviceMonitor: @unchecked Sendable {
    static let shared = DeviceMonitor()
    let monitor: UnsafeMutablePointer<GstDeviceMonitor>?
    private init() { monitor = GStreamer.failure == nil ? parley_audio_device_monitor() : nil }
}
