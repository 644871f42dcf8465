import Foundation
import SIPMessages

/// A call's audio as the offer and the answer settled it: what a media layer needs to send and receive RTP.
public struct NegotiatedAudio: Sendable, Hashable {
    /// Our RTP port (from our description).
    public var localPort: Int
    /// Where the peer receives RTP: its `c=` address and port.
    public var remoteAddress: String
    /// The peer's RTP port.
    public var remotePort: Int
    /// The codec: the first the peer lists that we list too (the answer's first, whichever side answered: our
    /// answers keep the offer's order).
    public var codec: SDPCodec
    /// Whether we send: both directions allow it and we do not hold the call.
    public var sends: Bool
    /// Whether we take what arrives: our direction receives and the peer's sends.
    public var receives: Bool
    /// The payload type of RFC 4733 telephone-event, when both descriptions list it: the peer's (our tones carry
    /// it) and ours (the peer's tones carry it).
    public var telephoneEvent: Int?
    /// Our telephone-event payload type, which the peer's tones carry.
    public var localTelephoneEvent: Int?
    /// The peer's RTCP port (`a=rtcp`), when it gave one.
    public var remoteRTCPPort: Int?
    /// Milliseconds of audio per packet the peer asked for (`a=ptime`, 10–60), when it did.
    public var ptime: Int?

    /// The audio of `local` and `remote`, nil when either refused the stream or no codec is shared.
    init?(local: SDPSession, remote: SDPSession, localHold: Bool) {
        guard local.audioPort > 0, remote.audioPort > 0,
            let codec = remote.codecs.first(where: local.codecs.contains)
        else { return nil }
        let theirs = remote.effectiveDirection
        localPort = local.audioPort
        remoteAddress = remote.connectionAddress
        remotePort = remote.audioPort
        self.codec = codec
        sends = !localHold && local.direction.sends && theirs.receives
        receives = !localHold && local.direction.receives && theirs.sends
        telephoneEvent = local.telephoneEvent == nil ? nil : remote.telephoneEvent
        localTelephoneEvent = remote.telephoneEvent == nil ? nil : local.telephoneEvent
        remoteRTCPPort = remote.rtcpPort
        ptime = remote.ptime.map { min(max($0, 10), 60) }
    }
}

/// What carries calls' audio for the engine (Media's GStreamer pipelines in a node; a recorder in tests). The engine
/// calls it on its loop: a port for each new description, the negotiated audio whenever it changes (nil: the call
/// has none now), mute, and the port back when the call is over. Without one, calls carry signalling only and
/// every description offers `EngineConfiguration.mediaPort`.
public protocol CallMediaHandler: AnyObject {
    /// A local RTP port for a new call's first description (the RTCP port is the next), nil when none is free.
    func reservePort() -> Int?
    /// The call's RTP port is free again (the call is over).
    func releasePort(_ port: Int)
    /// The call's negotiated audio changed; nil stops it.
    func audioChanged(_ audio: NegotiatedAudio?, for conversation: UUID)
    /// The user muted or unmuted the call (silence is sent while muted).
    func muteChanged(_ muted: Bool, for conversation: UUID)
    /// Send keypad tones in the call's stream (RFC 4733; the audio lists telephone-event).
    func sendTones(_ digits: String, for conversation: UUID)
}
