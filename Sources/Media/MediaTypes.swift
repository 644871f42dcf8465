import ICE
import Foundation

/// An audio codec Parley sends and receives: G.711 at 8 kHz (RFC 3551's static payload types) and opus (RFC 7587,
/// 48 kHz, a dynamic payload type), named as SDP names them.
public enum AudioCodec: String, Sendable, Hashable, CaseIterable {
    /// G.711 µ-law.
    case pcmu = "PCMU"
    /// G.711 A-law.
    case pcma = "PCMA"
    /// Opus.
    case opus

    /// The RTP payload type: G.711's static one; for opus the one Parley's own descriptions give it.
    public var payloadType: Int {
        switch self {
        case .pcmu: 0
        case .pcma: 8
        case .opus: 111
        }
    }
    /// Its RTP clock rate in Hz (and the rate the pipeline encodes at).
    public var clockRate: Int { self == .opus ? 48_000 : 8_000 }
    /// Its name in GStreamer's RTP caps.
    var encodingName: String { rawValue.uppercased() }

    /// GStreamer's elements for it: encoder, payloader, depayloader, decoder.
    var elements: (encoder: String, payloader: String, depayloader: String, decoder: String) {
        switch self {
        case .pcmu: ("mulawenc", "rtppcmupay", "rtppcmudepay", "mulawdec")
        case .pcma: ("alawenc", "rtppcmapay", "rtppcmadepay", "alawdec")
        case .opus: ("opusenc", "rtpopuspay", "rtpopusdepay", "opusdec")
        }
    }
}

/// What a call sends: `--audio-source tone:HZ | file:PATH.wav | device | silence`.
public enum AudioSource: Sendable, Hashable, CustomStringConvertible {
    /// A sine tone at this frequency.
    case tone(hertz: Double)
    /// A WAV file, played once (silence is not sent after it: the stream pauses).
    case file(path: String)
    /// The desktop sound server's default input (PulseAudio or PipeWire).
    case device
    /// Silence (RTP keeps flowing).
    case silence

    /// Reads the command-line form; nil with nothing else to say is never returned: the error names the problem.
    public init(parsing text: String) throws(MediaError) {
        switch text {
        case "device": self = .device
        case "silence": self = .silence
        default:
            if text.hasPrefix("tone:"), let hertz = Double(text.dropFirst(5)), hertz >= 20, hertz <= 3_900 {
                self = .tone(hertz: hertz)
            } else if text.hasPrefix("file:"), text.count > 5 {
                self = .file(path: String(text.dropFirst(5)))
            } else {
                throw MediaError(
                    "--audio-source takes tone:HZ (20–3900, what 8 kHz audio carries), file:PATH.wav, device or silence, not \(text)")
            }
        }
    }

    /// The command-line form.
    public var description: String {
        switch self {
        case .tone(let hertz): "tone:\(hertz.formatted(.number.grouping(.never)))"
        case .file(let path): "file:\(path)"
        case .device: "device"
        case .silence: "silence"
        }
    }
}

/// Where a call's received audio goes: `--audio-sink file:DIR | device | null`.
public enum AudioSink: Sendable, Hashable, CustomStringConvertible {
    /// One WAV file per call in this directory, named by the conversation's UUID.
    case files(directory: String)
    /// The desktop sound server's default output.
    case device
    /// Nowhere (the audio is received and decoded, then dropped).
    case null

    /// Reads the command-line form.
    public init(parsing text: String) throws(MediaError) {
        switch text {
        case "device": self = .device
        case "null": self = .null
        default:
            guard text.hasPrefix("file:"), text.count > 5 else {
                throw MediaError("--audio-sink takes file:DIR (one WAV file per call), device or null, not \(text)")
            }
            self = .files(directory: String(text.dropFirst(5)))
        }
    }

    /// The command-line form.
    public var description: String {
        switch self {
        case .files(let directory): "file:\(directory)"
        case .device: "device"
        case .null: "null"
        }
    }
}

/// The negotiated stream a media session carries (from the offer and the answer).
public struct MediaStreamParameters: Sendable, Hashable {
    /// The codec both sides use.
    public var codec: AudioCodec
    /// Its payload type in what we send (the peer's), and in what we receive (ours).
    public var payloadType: Int
    public var receivedPayloadType: Int
    /// Where our RTP goes (the peer's `c=` address) and its port; RTCP goes to `remoteRTCPPort`.
    public var remoteHost: String
    /// The peer's RTP port.
    public var remotePort: Int
    /// The peer's RTCP port (`a=rtcp`, else the RTP port + 1).
    public var remoteRTCPPort: Int
    /// Milliseconds of audio per packet.
    public var ptime: Int
    /// Whether we send (the negotiated direction allows it and we do not hold).
    public var sends: Bool
    /// Whether we play or record what arrives.
    public var receives: Bool
    /// The payload type of RFC 4733 telephone-event both sides listed, if any (keypad tones in the stream): the
    /// peer's, which our tones carry.
    public var telephoneEvent: Int?
    /// The payload type the peer's tones carry (ours, from our description), when it differs.
    public var receivedTelephoneEvent: Int?
    /// How the packets are protected (plain RTP by default).
    public var encryption = MediaEncryption.none
    /// Whether we wait for the peer to show it receives us before sending anything (an answer not yet
    /// acknowledged): the engine clears it at the ACK.
    public var awaitsPeer = false
    /// The call's ICE agent, when the stream goes through the pair its checks select (else plain UDP to
    /// `remoteHost`).
    public var ice: ICEBinding?

    /// Whether `remoteHost` is an address: RFC 2543's hold gives `0.0.0.0` (or `::`), where nothing may be sent.
    public var hasRemoteAddress: Bool { remoteHost != "0.0.0.0" && remoteHost != "::" }

    /// A stream.
    public init(
        codec: AudioCodec, remoteHost: String, remotePort: Int, remoteRTCPPort: Int? = nil, ptime: Int = 20,
        sends: Bool = true, receives: Bool = true, telephoneEvent: Int? = nil, receivedTelephoneEvent: Int? = nil,
        payloadType: Int? = nil, receivedPayloadType: Int? = nil
    ) {
        self.payloadType = payloadType ?? codec.payloadType
        self.receivedPayloadType = receivedPayloadType ?? payloadType ?? codec.payloadType
        self.telephoneEvent = telephoneEvent
        self.receivedTelephoneEvent = receivedTelephoneEvent
        self.codec = codec
        self.remoteHost = remoteHost
        self.remotePort = remotePort
        self.remoteRTCPPort = remoteRTCPPort ?? remotePort + 1
        self.ptime = ptime
        self.sends = sends
        self.receives = receives
    }
}

/// A call's ICE agent as its media's transport (compared by identity: the same agent is the same transport).
public struct ICEBinding: Sendable, Hashable {
    /// The agent (RTP on component 1, RTCP on 2).
    public let agent: ICEAgent

    /// A binding.
    public init(_ agent: ICEAgent) { self.agent = agent }

    public static func == (lhs: ICEBinding, rhs: ICEBinding) -> Bool { lhs.agent === rhs.agent }
    public func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(agent)) }
}

/// A media failure, as a value with a sentence for the log.
public struct MediaError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What went wrong.
    public let message: String

    /// An error.
    public init(_ message: String) { self.message = message }

    /// The message.
    public var description: String { message }
}
