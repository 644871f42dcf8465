import Foundation
import Media
import ParleyEngine
import Synchronization

/// `parleyd --ringtone`: what an incoming call rings with on the desktop.
public enum RingtoneChoice: Sendable, Hashable, CustomStringConvertible {
    /// The sound theme's `phone-incoming-call` (and `phone-outgoing-calling` as the ringback).
    case theme
    /// This file (WAV, or anything GStreamer decodes); the ringback is still the theme's.
    case file(path: String)
    /// No ringtone and no ringback.
    case off

    /// Reads `--ringtone`'s value: `off`, `theme` or a file's path.
    public init(parsing text: String) {
        switch text {
        case "off": self = .off
        case "theme", "default": self = .theme
        default: self = .file(path: text)
        }
    }

    /// The option's form.
    public var description: String {
        switch self {
        case .theme: "theme"
        case .file(let path): path
        case .off: "off"
        }
    }
}

/// Finds a sound by its name in the freedesktop sound theme (the Sound Theme and Sound Naming specifications):
/// `$XDG_DATA_HOME/sounds`, then each of `$XDG_DATA_DIRS`' `sounds`, in the theme `freedesktop`, its `stereo`
/// output profile, as `.oga`, `.ogg` or `.wav`.
enum SoundTheme {
    static func path(of name: String, environment: [String: String] = ProcessInfo.processInfo.environment) -> String? {
        let home = environment["XDG_DATA_HOME"].flatMap { $0.isEmpty ? nil : $0 }
            ?? environment["HOME"].map { $0 + "/.local/share" }
        let dataDirectories = (environment["XDG_DATA_DIRS"].flatMap { $0.isEmpty ? nil : $0 } ?? "/usr/local/share:/usr/share")
            .split(separator: ":").map(String.init)
        for base in [home].compactMap({ $0 }) + dataDirectories {
            for file in ["oga", "ogg", "wav"].map({ "\(base)/sounds/freedesktop/stereo/\(name).\($0)" })
            where FileManager.default.isReadableFile(atPath: file) {
                return file
            }
        }
        return nil
    }
}

/// Plays the engine's ``Ringer`` sounds on the desktop: one looped sound at a time, on a phone-role stream.
final class DesktopRinger: CallRinging {
    private let ringtone: String?
    private let ringback: String?
    private let device: DeviceAudio
    private let log: EngineLog
    private let playing = Mutex<LoopedSound?>(nil)

    /// A ringer for `choice`; nil when it is off or no sound is found (said in the log).
    init?(_ choice: RingtoneChoice, device: DeviceAudio, log: EngineLog) {
        let theme = SoundTheme.path(of: "phone-incoming-call")
        switch choice {
        case .off: return nil
        case .theme: ringtone = theme
        case .file(let path): ringtone = path
        }
        ringback = SoundTheme.path(of: "phone-outgoing-calling")
        guard ringtone != nil || ringback != nil else {
            log.info("no ringtone: the sound theme has no phone-incoming-call (install sound-theme-freedesktop)")
            return nil
        }
        self.device = device
        self.log = log
        log.info("ringtone: \(ringtone ?? "none"), ringback: \(ringback ?? "none")")
    }

    func ring(_ effect: Ringer.Effect) {
        let sound: LoopedSound?
        switch effect {
        case .stop: sound = nil
        case .play(.ringtone): sound = ringtone.map { LoopedSound(path: $0, device: device, report: { [log] in log.error($0) }) }
        case .play(.ringback): sound = ringback.map { LoopedSound(path: $0, device: device, report: { [log] in log.error($0) }) }
        }
        playing.withLock { current in
            current?.stop()
            current = sound
        }
    }

    /// Stops what plays (the node is shutting down).
    func stop() { ring(.stop) }
}
