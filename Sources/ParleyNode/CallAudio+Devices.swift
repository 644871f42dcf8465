import Foundation
import Media
import ParleyIO

/// Why a call's devices could not be chosen.
enum AudioDeviceRefusal: Error {
    /// No such call with audio now.
    case noAudio
    /// The call does not play on the desktop's devices (a file, a tone, a browser, no PulseAudio).
    case notOnDevices
    /// No device of that kind by that name.
    case unknown(String)
}

/// The desktop's devices for calls (docs/desktop.md, "Devices"): listed by GStreamer's device monitor, chosen per call
/// (`setAudioDevice`), and watched every 2 s while a call plays on them: a new default is announced (the calls that
/// follow the default move with it: the sound server moves their streams), and a call whose chosen device went comes
/// back to the default, announced too.
extension CallAudio {
    /// How often the devices are looked at while calls play on them.
    static let deviceWatchInterval = Duration.seconds(2)

    /// Whether calls' audio plays on the desktop's devices (PulseAudio streams) at all.
    var playsOnDevices: Bool {
        guard configuration.device.pulse else { return false }
        if case .device = configuration.source { return true }
        if case .device = configuration.sink { return true }
        return false
    }

    /// Plays `conversation` on `source` and `sink` (sound-server names; nil: the default); `done` on the loop.
    func chooseDevices(
        _ conversation: UUID, source: String?, sink: String?, done: @escaping @Sendable (Result<Void, AudioDeviceRefusal>) -> Void
    ) {
        guard let session = sessions[conversation] else { return done(.failure(.noAudio)) }
        guard playsOnDevices else { return done(.failure(.notOnDevices)) }
        let me = LoopWeak(self, identity: loop.identity)
        DispatchQueue.global().async { [loop] in
            let devices = AudioDevice.list()
            for (kind, wanted) in [(AudioDevice.Kind.source, source), (.sink, sink)] {
                if let wanted, !devices.contains(where: { $0.kind == kind && $0.id == wanted }) {
                    return done(.failure(.unknown("no \(kind.rawValue) named \(wanted)")))
                }
            }
            loop.execute {
                guard let self = me.value, self.sessions[conversation] === session else { return done(.failure(.noAudio)) }
                self.chosenDevices[conversation] = (source, sink)
                session.choose(source: source, sink: sink)
                self.log.info("\(conversation): audio on \(source ?? "the default source") and \(sink ?? "the default sink")")
                done(.success(()))
            }
        }
    }

    /// Looks at the devices every 2 s while calls play on them (started with a call's audio; stops by itself).
    func watchDevices() {
        guard playsOnDevices, deviceWatch == nil, !sessions.isEmpty else { return }
        deviceWatch = loop.schedule(after: Self.deviceWatchInterval) { [weak self] in
            guard let self else { return }
            let me = LoopWeak(self, identity: self.loop.identity)
            DispatchQueue.global().async { [loop = self.loop] in
                let devices = AudioDevice.list()
                loop.execute {
                    guard let self = me.value else { return }
                    self.deviceWatch = nil
                    self.devicesSeen(devices)
                    self.watchDevices()
                }
            }
        }
    }

    /// What the watch found: a new default, or a chosen device gone.
    func devicesSeen(_ devices: [AudioDevice]) {
        guard !devices.isEmpty else { return }  // no sound server answered: nothing to say
        let defaults = (
            source: devices.first { $0.kind == .source && $0.isDefault }?.id,
            sink: devices.first { $0.kind == .sink && $0.isDefault }?.id)
        if let seen = defaultDevices, seen != defaults {
            log.info("audio: the default devices are now \(defaults.source ?? "none") and \(defaults.sink ?? "none")")
            onAudioRoute?(nil, defaults.source, defaults.sink, "the default device changed")
        }
        defaultDevices = defaults
        for (conversation, chosen) in chosenDevices {
            let sourceGone = chosen.source.map { id in !devices.contains { $0.kind == .source && $0.id == id } } ?? false
            let sinkGone = chosen.sink.map { id in !devices.contains { $0.kind == .sink && $0.id == id } } ?? false
            guard sourceGone || sinkGone else { continue }
            let kept = (source: sourceGone ? nil : chosen.source, sink: sinkGone ? nil : chosen.sink)
            chosenDevices[conversation] = kept
            sessions[conversation]?.choose(source: kept.source, sink: kept.sink)
            let what = sourceGone ? "microphone" : "speaker"
            log.info("\(conversation): its chosen \(what) went away: the call goes on the default")
            onAudioRoute?(conversation, kept.source ?? defaults.source, kept.sink ?? defaults.sink, "the chosen \(what) went away")
        }
    }
}
