import CommandLineSupport
import Foundation
import Media
import ParleyEngine
import ParleyNode

extension DaemonOptions {
    /// `--media gstreamer|external|off`, `--audio-source`, `--audio-sink`, `--rtp-ports LOW-HIGH`: the node's audio
    /// (nil when off or external, which sets `external`). GStreamer is the default; without it (or a plugin) the
    /// default is off, said once, and `--media gstreamer` fails.
    static func media(_ arguments: inout Arguments, external: inout Bool) throws(UsageError) -> MediaConfiguration? {
        let explicit = try arguments.option("--media")
        let mode = explicit ?? "gstreamer"
        let source = try arguments.option("--audio-source")
        let sink = try arguments.option("--audio-sink")
        let ports = try arguments.option("--rtp-ports")
        let capacity = try arguments.option("--max-media-calls", as: "a number of calls (1–100000)", in: 1...100_000)
        let maxRecording = try arguments.option("--max-recording").map(Self.recordingCap)
        let ringtone = try arguments.option("--ringtone").map(RingtoneChoice.init(parsing:))
        let echo = try arguments.option("--echo-cancel", as: "auto, on or off", EchoCancellation.init(rawValue:))
        switch mode {
        case "off", "external":
            guard source == nil, sink == nil, ports == nil, capacity == nil, maxRecording == nil, ringtone == nil, echo == nil else {
                throw UsageError(
                    "--audio-source, --audio-sink, --rtp-ports, --max-media-calls, --max-recording, --ringtone and --echo-cancel go with --media gstreamer")
            }
            external = mode == "external"
            return nil
        case "gstreamer":
            if explicit == nil, let problem = MediaSupport.problem {
                // The embedded default on a machine without GStreamer: calls still work, without audio.
                DaemonOutput.line(.error, "audio off: \(problem)")
                return nil
            }
            do {
                var configuration = MediaConfiguration(
                    source: try source.map(AudioSource.init(parsing:)), sink: try sink.map(AudioSink.init(parsing:)))
                if let ports { configuration.ports = try portRange(ports) }
                if let capacity { configuration.maxCalls = capacity }
                if let maxRecording { configuration.maxRecording = maxRecording }
                if let echo { configuration.device.echoCancellation = echo }
                if case .file(let path)? = ringtone, !FileManager.default.isReadableFile(atPath: path) {
                    throw UsageError("--ringtone expects off, theme or a sound file, and \(path) cannot be read")
                }
                if let ringtone { configuration.ringtone = ringtone }
                return configuration
            } catch let error as MediaError {
                throw UsageError(error.message)
            } catch let error as UsageError {
                throw error
            } catch {
                throw UsageError("\(error)")
            }
        default:
            throw UsageError("--media expects gstreamer, external or off, got '\(mode)'")
        }
    }

    /// `--video-source` and `--video-sink`: calls' video when the node takes video (`taken`, `--video`) and carries
    /// media; nil without `--video`. Said once when GStreamer cannot carry video (the calls then negotiate it only).
    static func video(_ arguments: inout Arguments, taken: Bool, media: MediaConfiguration?) throws(UsageError) -> VideoConfiguration? {
        let source = try arguments.option("--video-source")
        let sink = try arguments.option("--video-sink")
        let files = try arguments.option("--video-files")
        guard taken, media != nil else {
            guard source == nil, sink == nil, files == nil else {
                throw UsageError("--video-source, --video-sink and --video-files go with --video and --media gstreamer")
            }
            return nil
        }
        var isFolder: ObjCBool = false
        if let files, !FileManager.default.fileExists(atPath: files, isDirectory: &isFolder) || !isFolder.boolValue {
            throw UsageError("--video-files takes a folder, and \(files) is none")
        }
        if let problem = MediaSupport.videoProblem { DaemonOutput.line(.error, "video negotiated but not carried: \(problem)") }
        do {
            let parsed = try source.map(VideoSource.init(parsing:))
            var configuration = VideoConfiguration(source: parsed, sink: try sink.map(VideoSink.init(parsing:)))
            configuration.pickableFiles = files
            return configuration
        } catch {
            throw UsageError(error.message.hasPrefix("a video source") ? "--video-source: " + error.message : error.message)
        }
    }

    /// `--video-codecs vp8,h264`: the video codecs offered and accepted, in order; by default VP8 and H.264, H.264 only
    /// where the media layer carries it (openh264) when it carries video.
    static func videoCodecs(_ arguments: inout Arguments, taken: Bool, carried: Bool) throws(UsageError) -> [String] {
        let defaults = carried && !MediaSupport.hasH264 ? ["VP8"] : ["VP8", "H264"]
        guard let text = try arguments.option("--video-codecs") else { return defaults }
        guard taken else { throw UsageError("--video-codecs goes with --video") }
        var codecs: [String] = []
        for name in text.split(separator: ",").map({ $0.trimmingCharacters(in: .whitespaces).uppercased() }) {
            guard ["VP8", "H264"].contains(name), !codecs.contains(name) else {
                throw UsageError("--video-codecs takes vp8 and h264, each once, in order of preference, not '\(text)'")
            }
            if name == "H264", carried, !MediaSupport.hasH264 {
                throw UsageError("--video-codecs h264: this GStreamer has no openh264 (install gstreamer1.0-plugins-bad)")
            }
            codecs.append(name)
        }
        return codecs
    }

    /// `--max-recording`: `off`, or a length of 1 s to 7 days as seconds or with a unit (`90s`, `45m`, `2h`).
    static func recordingCap(_ text: String) throws(UsageError) -> Duration? {
        if text == "off" { return nil }
        let units: [Character: Int] = ["s": 1, "m": 60, "h": 3_600]
        let unit = text.last.flatMap { units[$0] } ?? 1
        let digits = unit == 1 && text.last != "s" ? Substring(text) : text.dropLast()
        guard let number = Int(digits), (1...7 * 86_400 / unit).contains(number) else {
            throw UsageError("--max-recording expects off or a length of 1 s to 7 days such as 3600, 90m or 2h, got '\(text)'")
        }
        return .seconds(number * unit)
    }

    /// `--media-encryption auto|none|sdes|dtls` and `--require-media-encryption`: what our offers use, and whether
    /// plain media is refused. Encryption needs parleyd's own media (GStreamer's SRTP elements, and its DTLS ones for
    /// `dtls`), not `--media external`.
    static func mediaEncryption(_ arguments: inout Arguments, media: MediaConfiguration?) throws(UsageError) -> MediaEncryptionPolicy {
        let explicit = try arguments.option(
            "--media-encryption", as: "none, auto, sdes or dtls", MediaEncryptionPolicy.Offer.init(rawValue:))
        let required = arguments.flag("--require-media-encryption")
        if required && explicit == MediaEncryptionPolicy.Offer.none {
            throw UsageError("--require-media-encryption and --media-encryption none contradict each other")
        }
        // Required, our offers are encrypted too: keyed by DTLS where GStreamer carries it (SDES keys travel in the
        // SDP, readable on the path over UDP or TCP), else by SDES.
        let offer = explicit ?? (required ? (MediaSupport.dtlsProblem == nil ? .dtls : .sdes) : .none)
        if required || offer != .none, media == nil {
            throw UsageError("encrypted media needs parleyd's own media (--media gstreamer): --media off and external carry no SRTP")
        }
        if required || offer != .none, let problem = MediaSupport.encryptionProblem {
            throw UsageError("encrypted media: \(problem)")
        }
        if offer == .dtls, let problem = MediaSupport.dtlsProblem {
            throw UsageError("DTLS-SRTP: \(problem)")
        }
        return MediaEncryptionPolicy(offer: offer, required: required)
    }

    /// `LOW-HIGH`, within 1024–65535, at least one even port and the next.
    private static func portRange(_ text: String) throws(UsageError) -> ClosedRange<Int> {
        let parts = text.split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count == 2, let low = Int(parts[0]), let high = Int(parts[1]), low >= 1024, high <= 65_535,
            low + low % 2 + 1 <= high
        else {
            throw UsageError("--rtp-ports expects LOW-HIGH within 1024–65535 holding an even port and the next, e.g. 40000-40999, got '\(text)'")
        }
        return low...high
    }
}
