import Foundation

/// The media direction of an SDP stream (RFC 3264 §5.1, §8.4).
public enum SDPDirection: String, Sendable, Hashable, CaseIterable {
    /// Send and receive (the default when no direction attribute is present).
    case sendrecv
    /// Send only: the writer puts the other side on hold.
    case sendonly
    /// Receive only: the answer to a sendonly offer.
    case recvonly
    /// Neither: both sides hold, or the stream is paused.
    case inactive

    /// A direction from what the writer does.
    public init(sends: Bool, receives: Bool) {
        switch (sends, receives) {
        case (true, true): self = .sendrecv
        case (true, false): self = .sendonly
        case (false, true): self = .recvonly
        case (false, false): self = .inactive
        }
    }

    /// Whether the writer sends media.
    public var sends: Bool { self == .sendrecv || self == .sendonly }

    /// Whether the writer wants to receive media.
    public var receives: Bool { self == .sendrecv || self == .recvonly }

    /// The same stream seen from the other side: sendonly ↔ recvonly (what an answer mirrors, RFC 3264 §6.1).
    public var reversed: SDPDirection { SDPDirection(sends: receives, receives: sends) }

    /// What both directions allow.
    public func intersection(_ other: SDPDirection) -> SDPDirection {
        SDPDirection(sends: sends && other.sends, receives: receives && other.receives)
    }
}

/// The audio codecs Parley negotiates: G.711 at its static RTP payload types (RFC 3551), and opus (RFC 7587) at
/// a dynamic one, which each description names (``SDPSession/opusPayloadType``).
public enum SDPCodec: Sendable, Hashable, CaseIterable {
    /// G.711 µ-law, payload type 0.
    case pcmu
    /// G.711 A-law, payload type 8.
    case pcma
    /// Opus, 48 kHz RTP clock, a dynamic payload type.
    case opus

    /// The static payload type (for opus, the one our own descriptions give it).
    public var payloadType: Int {
        switch self {
        case .pcmu: 0
        case .pcma: 8
        case .opus: 111
        }
    }

    /// The encoding name of its rtpmap attribute.
    public var encodingName: String {
        switch self {
        case .pcmu: "PCMU"
        case .pcma: "PCMA"
        case .opus: "opus"
        }
    }

    /// The RTP clock rate (RFC 7587: opus is always 48 kHz on the wire).
    public var clockRate: Int { self == .opus ? 48_000 : 8_000 }

    /// Its rtpmap attribute's value: encoding name, clock rate and, for opus, the two channels RFC 7587 requires.
    var rtpmap: String { self == .opus ? "opus/48000/2" : "\(encodingName)/8000" }

    /// The codec of a static payload type, if Parley knows it.
    public init?(payloadType: Int) {
        switch payloadType {
        case 0: self = .pcmu
        case 8: self = .pcma
        default: return nil
        }
    }
}

/// The `o=` line: who made the description and which version of it this is.
public struct SDPOrigin: Sendable, Hashable {
    /// The user name ("-" when there is none).
    public var username: String
    /// The session id, fixed for the life of the session.
    public var sessionID: UInt64
    /// The version, bumped by every new offer (RFC 3264 §8).
    public var sessionVersion: UInt64
    /// The address of the machine that made it (IPv4, IPv6 or a name).
    public var address: String

    /// An origin.
    public init(username: String = "-", sessionID: UInt64, sessionVersion: UInt64, address: String) {
        self.username = username
        self.sessionID = sessionID
        self.sessionVersion = sessionVersion
        self.address = address
    }

    /// The same origin with the version bumped, for the next offer.
    public func nextVersion() -> SDPOrigin {
        var copy = self
        copy.sessionVersion &+= 1
        return copy
    }
}

/// A session description as Parley uses it for offer/answer: one audio stream with G.711 codecs.
///
/// Parsing reads the first `m=audio` stream and the first `m=video` stream. `connectionAddress` is the stream's `c=` or else the session's;
/// `direction` is the stream's attribute, else the session's, else sendrecv (linphone resumes a call with no
/// direction attribute at all). Of the audio payload types, 0 and 8 and a `telephone-event/8000` are represented,
/// with `a=ptime` and `a=rtcp`. Writing always states the direction and the rtpmap of each codec.
///
/// Security (issue 42): the audio stream's protocol is typed (``SDPTransportProtocol``); its usable `a=crypto` lines
/// (RFC 4568; at most 16 read), `a=fingerprint` lines (RFC 8122; the stream's, else the session's), `a=setup` (the
/// stream's, else the session's) and `a=rtcp-mux` are values, written at media level. A line that cannot be used is
/// skipped, never a reason to refuse the whole description. No key appears in a description of any of these values.
///
/// ICE (issue 43): the audio stream's credentials, options and usable UDP candidates (RFC 8839) are ``ice``, written
/// at media level after the other attributes (`a=ice-lite` at session level). An offer's ICE is never copied into
/// the answer: the engine gives the answer its own.
public struct SDPSession: Sendable, Hashable {
    /// The `o=` line.
    public var origin: SDPOrigin
    /// The `s=` line ("-" by default).
    public var sessionName: String
    /// The address media goes to; "0.0.0.0" is RFC 2543 hold.
    public var connectionAddress: String
    /// The RTP port of the audio stream; 0 when the stream is refused.
    public var audioPort: Int
    /// The transport protocol of the audio stream (RTP/AVP; RTP/SAVP and UDP/TLS/RTP/SAVP when encrypted).
    public var audioProtocol: SDPTransportProtocol
    /// The G.711 codecs of the stream, in the order listed.
    public var codecs: [SDPCodec]
    /// The direction as written (media level over session level), sendrecv when absent.
    public var direction: SDPDirection
    /// The first `m=video` stream, if any (written after the audio stream).
    public var video: SDPVideo?
    /// The payload type of RFC 4733 `telephone-event/8000` in the audio stream, if listed.
    public var telephoneEvent: Int?
    /// The dynamic payload type of opus in the audio stream, when it lists opus (111 in our own offers).
    public var opusPayloadType: Int?
    /// The audio stream's `a=ptime` (milliseconds of audio per packet), if given.
    public var ptime: Int?
    /// The audio stream's `a=rtcp` port (RFC 3605), if given; RTCP is on the RTP port + 1 otherwise.
    public var rtcpPort: Int?
    /// The audio stream's SDES keys (RFC 4568): its usable `a=crypto` lines, in order (meaningful with RTP/SAVP(F)).
    public var crypto: [SDPCrypto]
    /// The DTLS certificate fingerprints (RFC 8122): the audio stream's usable `a=fingerprint` lines, else the
    /// session's.
    public var fingerprints: [SDPFingerprint]
    /// The DTLS setup role (RFC 4145, 5763): the audio stream's `a=setup`, else the session's; nil when absent.
    public var setup: SDPSetupRole?
    /// Whether the audio stream has `a=rtcp-mux` (RFC 5761: RTCP on the RTP port).
    public var rtcpMux: Bool
    /// The audio stream's ICE (RFC 8839): its ufrag and pwd (the stream's, else the session's), options and usable
    /// candidates; nil when it has none, or not both a valid ufrag and pwd.
    public var ice: SDPICE?

    /// A description.
    public init(
        origin: SDPOrigin, connectionAddress: String, audioPort: Int, codecs: [SDPCodec] = [.pcmu, .pcma],
        direction: SDPDirection = .sendrecv, sessionName: String = "-", audioProtocol: SDPTransportProtocol = .rtpAVP,
        video: SDPVideo? = nil, telephoneEvent: Int? = nil, ptime: Int? = nil, rtcpPort: Int? = nil,
        opusPayloadType: Int? = nil, crypto: [SDPCrypto] = [], fingerprints: [SDPFingerprint] = [],
        setup: SDPSetupRole? = nil, rtcpMux: Bool = false, ice: SDPICE? = nil
    ) {
        self.ice = ice
        self.crypto = crypto
        self.fingerprints = fingerprints
        self.setup = setup
        self.rtcpMux = rtcpMux
        self.opusPayloadType = opusPayloadType
        self.video = video
        self.telephoneEvent = telephoneEvent
        self.ptime = ptime
        self.rtcpPort = rtcpPort
        self.origin = origin
        self.sessionName = sessionName
        self.connectionAddress = connectionAddress
        self.audioPort = audioPort
        self.audioProtocol = audioProtocol
        self.codecs = codecs
        self.direction = direction
    }

    /// The payload type `codec` has in this description.
    public func payloadType(of codec: SDPCodec) -> Int {
        codec == .opus ? opusPayloadType ?? codec.payloadType : codec.payloadType
    }

    /// Whether it carries video: a video stream with a port.
    public var isVideo: Bool { video?.isActive == true }

    /// Whether this is an RFC 2543 hold: the connection address is 0.0.0.0 (or ::), whatever the direction says.
    public var isOldStyleHold: Bool { connectionAddress == "0.0.0.0" || connectionAddress == "::" }

    /// The direction with old-style hold applied: a writer that gives no address cannot receive, so 0.0.0.0 removes
    /// "receive" from what the attribute says (sendrecv becomes sendonly, recvonly becomes inactive).
    public var effectiveDirection: SDPDirection {
        isOldStyleHold ? SDPDirection(sends: direction.sends, receives: false) : direction
    }

    /// Whether the writer puts the stream on hold: it will not receive media (sendonly, inactive or old-style hold).
    public var isHold: Bool { !effectiveDirection.receives }

    /// The answer to this offer (RFC 3264 §6): the offered codecs Parley also supports, in the offer's order; the
    /// direction mirrored from the offer's effective direction and narrowed to `localDirection` (our own hold); port 0
    /// if the offer refused the stream. Nil when no codec is common or the protocol cannot be answered (answer 488).
    ///
    /// An offered video stream is answered too: at `videoPort` when we take video and share a format (SRTP video
    /// with one of `videoKeys`, its own keys; DTLS-SRTP video with `videoDTLS`, a handshake of its own; of
    /// `videoCodecs` only, when given), else with port 0 (``SDPVideo/answer(port:direction:keys:accepting:dtls:)``). With
    /// `telephoneEvents`, an offered `telephone-event` is answered with the offer's payload type (RFC 4733); `ptime`
    /// and `rtcpPort` (RFC 3605's `a=rtcp`) are ours.
    ///
    /// `security` is what we can answer an encrypted offer with. Plain (the default) answers RTP/AVP only. An RTP/AVP
    /// offer is always answered plain, its `a=crypto` lines ignored (as linphone does). `.sdes(ours)` (our key for
    /// each suite we accept, ``SDPCrypto/fresh(suites:key:)``) answers RTP/SAVP(F) in kind with the offer's first
    /// line whose suite we have: its tag, our key (``answerCrypto(from:)``). `.dtls(fingerprints:setup:)` answers
    /// UDP/TLS/RTP/SAVP(F) in kind with our fingerprints and the role ``SDPSetupRole/answer(to:preferring:)`` gives.
    /// Anything else is nil. `a=rtcp-mux` is answered when offered and `acceptsRTCPMux`. The offer's ICE is not copied:
    /// the answer has none until the engine sets its own (``ice``).
    public func answer(
        origin: SDPOrigin, connectionAddress: String, audioPort: Int, supportedCodecs: [SDPCodec] = [.pcmu, .pcma],
        localDirection: SDPDirection = .sendrecv, videoPort: Int? = nil, telephoneEvents: Bool = false,
        ptime: Int? = nil, rtcpPort: Int? = nil, security: SDPMediaSecurity = .plain, acceptsRTCPMux: Bool = false,
        videoKeys: [SDPCrypto] = [], videoCodecs: [String]? = nil,
        videoDTLS: (fingerprints: [SDPFingerprint], preferring: SDPSetupRole)? = nil
    ) -> SDPSession? {
        let common = codecs.filter(supportedCodecs.contains)
        guard !common.isEmpty, let (answerProtocol, answerSecurity) = securityAnswer(with: security) else { return nil }
        let plain = SDPSession(
            origin: origin, connectionAddress: connectionAddress, audioPort: self.audioPort == 0 ? 0 : audioPort,
            codecs: common, direction: effectiveDirection.reversed.intersection(localDirection),
            video: video.map { offered in
                offered.answer(
                    port: videoPort,
                    direction: (offered.direction ?? effectiveDirection).reversed.intersection(localDirection), keys: videoKeys,
                    accepting: videoCodecs, dtls: videoDTLS)
            }, telephoneEvent: telephoneEvents ? telephoneEvent : nil, ptime: ptime,
            rtcpPort: self.audioPort == 0 ? nil : rtcpPort, opusPayloadType: common.contains(.opus) ? payloadType(of: .opus) : nil,
            rtcpMux: rtcpMux && acceptsRTCPMux)
        return plain.secured(answerSecurity, feedback: answerProtocol.hasFeedback)
    }

    /// Parses an SDP body through libosip2's `sdp_message_parse`.
    public static func parse(_ body: Data) throws(SDPParseError) -> SDPSession {
        try SDPReader.parse(body)
    }

    /// The description as SDP text with CRLF line ends.
    public func serialize() -> Data {
        // Written straight into one buffer (every answer and offer carries this body). A value with a line break would
        // end its line early: breaks become spaces.
        var out = SDPWriter()
        out.put("v=0"); out.endLine()
        out.put("o="); out.put(origin.username); out.put(" "); out.put(origin.sessionID); out.put(" ")
        out.put(origin.sessionVersion); out.put(" IN "); out.put(Self.addressType(origin.address)); out.put(" ")
        out.put(origin.address); out.endLine()
        out.put("s="); out.put(sessionName.isEmpty ? "-" : sessionName); out.endLine()
        out.put("c=IN "); out.put(Self.addressType(connectionAddress)); out.put(" "); out.put(connectionAddress)
        out.endLine()
        out.put("t=0 0"); out.endLine()
        if ice?.isLite == true { out.put("a=ice-lite"); out.endLine() }
        out.put("m=audio "); out.put(audioPort); out.put(" "); out.put(audioProtocol.text)
        for codec in codecs { out.put(" "); out.put(payloadType(of: codec)) }
        if let telephoneEvent { out.put(" "); out.put(telephoneEvent) }
        out.endLine()
        for codec in codecs { out.put("a=rtpmap:"); out.put(payloadType(of: codec)); out.put(" "); out.put(codec.rtpmap); out.endLine() }
        if let telephoneEvent {
            out.put("a=rtpmap:"); out.put(telephoneEvent); out.put(" telephone-event/8000"); out.endLine()
            out.put("a=fmtp:"); out.put(telephoneEvent); out.put(" 0-15"); out.endLine()
        }
        if let ptime { out.put("a=ptime:"); out.put(ptime); out.endLine() }
        if let rtcpPort { out.put("a=rtcp:"); out.put(rtcpPort); out.endLine() }
        if rtcpMux { out.put("a=rtcp-mux"); out.endLine() }
        for line in crypto { out.put("a=crypto:"); out.put(line.attributeValue); out.endLine() }
        if let setup { out.put("a=setup:"); out.put(setup.rawValue); out.endLine() }
        for fingerprint in fingerprints { out.put("a=fingerprint:"); out.put(fingerprint.attributeValue); out.endLine() }
        out.put("a="); out.put(direction.rawValue); out.endLine()
        if let ice { for line in ice.mediaLines { out.put(line); out.endLine() } }
        if let video { for line in video.lines(direction: direction) { out.put(line); out.endLine() } }
        return Data(out.bytes)
    }

    private static func addressType(_ address: String) -> String { address.utf8.contains(0x3A) ? "IP6" : "IP4" }
}

/// SDP written as bytes: text (CR and LF become spaces: a value with a line break would end its line early) and
/// decimal numbers; `endLine` writes CRLF.
private struct SDPWriter {
    private(set) var bytes: [UInt8] = []

    init() { bytes.reserveCapacity(256) }

    /// A value: CR and LF become spaces.
    mutating func put(_ value: String) {
        value.withUTF8Bytes { utf8 in
            if utf8.contains(where: { $0 == 0x0D || $0 == 0x0A }) {
                for byte in utf8 { bytes.append(byte == 0x0D || byte == 0x0A ? 0x20 : byte) }
            } else {
                bytes.append(contentsOf: utf8)
            }
        }
    }

    /// A number in decimal (a negative one, never valid in SDP, keeps its sign).
    mutating func put(_ number: Int) {
        if number < 0 { bytes.append(0x2D) }
        put(UInt64(number.magnitude))
    }

    /// A number in decimal.
    mutating func put(_ number: UInt64) {
        let start = bytes.count
        var rest = number
        repeat {
            bytes.append(UInt8(ascii: "0") + UInt8(rest % 10))
            rest /= 10
        } while rest > 0
        bytes[start...].reverse()
    }

    mutating func endLine() {
        bytes.append(0x0D)
        bytes.append(0x0A)
    }
}

/// An SDP body Parley cannot use, as a value (answer 400 or 488; never a crash).
public struct SDPParseError: Error, Sendable, Hashable, CustomStringConvertible {
    /// A short ASCII description of the problem.
    public let reason: String

    /// An error.
    public init(reason: String) {
        self.reason = reason
    }

    /// The reason.
    public var description: String { reason }
}
