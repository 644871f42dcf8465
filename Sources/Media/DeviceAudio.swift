import Foundation

/// How a call's `device` audio meets the desktop (docs/desktop.md, "Audio: the phone role, ringing, echo
/// cancellation"): PulseAudio streams with the phone role when a PulseAudio server (or PipeWire's pulse server) is
/// reachable, else GStreamer's automatic choice; and whether our own echo canceller runs.
///
/// ```
///  pulsesrc (media.role=phone, 40 ms) ─ [16 kHz mono S16LE ─ webrtcdsp probe=echoprobe] ─ … the send chain
///  … the receive chain ─ [16 kHz mono S16LE ─ webrtcechoprobe name=echoprobe] ─ pulsesink (media.role=phone, 40 ms,
///                                                     [on the pipeline's clock, unslaved])
/// ```
public struct DeviceAudio: Sendable, Hashable {
    /// Whether device audio goes through PulseAudio streams (`pulsesrc`/`pulsesink`) with the phone role.
    public var pulse: Bool
    /// The `--echo-cancel` choice.
    public var echoCancellation: EchoCancellation

    /// A configuration; `pulse` nil takes PulseAudio whenever its server is reachable and `pulsesrc` is installed.
    public init(pulse: Bool? = nil, echoCancellation: EchoCancellation = .auto) {
        self.pulse = pulse ?? (GStreamer.hasSoundServer && GStreamer.has("pulsesrc") && GStreamer.has("pulsesink"))
        self.echoCancellation = echoCancellation
    }

    /// Whether a call whose source and sink are these runs our echo canceller: only when both are the device (the
    /// canceller needs what is played as its reference), `--echo-cancel` is `on`, or `auto` with a capture that does
    /// not land on the sound server's own canceller (`serverCancels`), and webrtcdsp is installed.
    func cancelsEcho(source: AudioSource, sink: AudioSink, serverCancels: Bool = false) -> Bool {
        guard case .device = source, case .device = sink else { return false }
        switch echoCancellation {
        case .off: return false
        case .auto where serverCancels: return false
        case .on, .auto: return GStreamer.has("webrtcdsp") && GStreamer.has("webrtcechoprobe")
        }
    }

    /// Whether `auto` should leave a call's echo to the sound server: its capture (`chosen`, or the default source)
    /// is the server's echo canceller. Asks the device monitor only when the answer matters.
    func leavesEchoToServer(source: AudioSource, sink: AudioSink, chosen: String?) -> Bool {
        guard pulse, echoCancellation == .auto, case .device = source, case .device = sink else { return false }
        return AudioDevice.capturesFromEchoCanceller(chosen: chosen)
    }

    /// The name of the device capture (pulsesrc), guarded against early RECONFIGURE events.
    static let capture = "capture"
    /// The name of the device playback (pulsesink): a call's chosen speaker is set on it.
    static let playback = "playback"
    /// The name of the echo canceller's probe on the playback branch.
    static let echoProbe = "echoprobe"
    /// The format the canceller and its probe work in (webrtcdsp takes S16LE or F32LE at 8, 16, 32 or 48 kHz).
    static let echoCaps = "audio/x-raw,format=S16LE,rate=16000,channels=1,layout=interleaved"
    /// PulseAudio's buffer and period for call streams: 40 ms and 10 ms, as GNOME Calls asks.
    private static let buffering = "buffer-time=40000 latency-time=10000"

    /// The stream properties of a call's streams: the phone role, and asking the server for its echo canceller when we
    /// run none of our own (PulseAudio's module-filter-apply loads module-echo-cancel for `filter.want`).
    private static func properties(serverCancels: Bool) -> String {
        "stream-properties=\"props,media.role=phone\(serverCancels ? ",filter.want=echo-cancel" : "")\""
    }

    /// The capture elements of a call (up to the raw audio the send chain converts).
    func capture(cancelling: Bool) -> String {
        let source = pulse ? "pulsesrc name=\(Self.capture) \(Self.buffering) \(Self.properties(serverCancels: !cancelling))" : "autoaudiosrc"
        guard cancelling else { return source }
        // Only the echo: noise suppression and gain control would change the voice's level (and hide a tone).
        return "\(source) ! audioconvert ! audioresample ! \(Self.echoCaps)"
            + " ! webrtcdsp probe=\(Self.echoProbe) echo-cancel=true echo-suppression-level=high noise-suppression=false"
            + " gain-control=false"
    }

    /// The playback elements of a call (from the decoded audio on).
    /// With the canceller the sink plays on the clock (sync=true): the probe takes each buffer's timestamp as the moment
    /// it is heard, and measured on a loopback (docs/desktop.md) the echo came back 50 to 80 dB weaker that way, 30 to 40
    /// dB weaker with sync=false and webrtcdsp's delay-agnostic mode, and not weaker at all with sync=false alone. Its
    /// sink provides no clock (the capture's is the pipeline's): with it providing one, two runs in six never cancelled.
    /// Nor does it slave its clock to the pipeline's (slave-method=none): the skew correction moves what plays by 20 ms
    /// steps after the first underruns, each step an echo path the canceller has to learn again (4 runs in 16 lost it).
    func playback(cancelling: Bool) -> String {
        let sync = cancelling ? "sync=true provide-clock=false slave-method=none" : "sync=false"
        let sink = pulse ? "pulsesink name=\(Self.playback) \(sync) \(Self.buffering) \(Self.properties(serverCancels: !cancelling))" : "autoaudiosink \(sync)"
        guard cancelling else { return sink }
        return "audioconvert ! audioresample ! \(Self.echoCaps) ! webrtcechoprobe name=\(Self.echoProbe) ! audioconvert ! \(sink)"
    }

    /// The sink of a ringtone or ringback: on a phone-role stream when PulseAudio is there.
    var soundSink: String {
        pulse ? "pulsesink \(Self.properties(serverCancels: false))" : "autoaudiosink"
    }
}

/// `--echo-cancel`: whether calls on device audio run GStreamer's WebRTC echo canceller.
public enum EchoCancellation: String, Sendable, Hashable, CaseIterable {
    /// On whenever a call both captures and plays on the device, unless its capture is the sound server's own echo
    /// canceller (PulseAudio's module-echo-cancel, PipeWire's echo-cancel source): then the server's does it.
    case auto
    /// On for every call that captures and plays on the device, whatever the source.
    case on
    /// Off: our streams ask the server for its own echo canceller instead (`filter.want=echo-cancel`).
    case off
}
