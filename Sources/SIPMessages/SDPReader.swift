import Foundation
internal import COSIP

/// SDP through libosip2's `sdp_message_t`, copied into `SDPSession`.
enum SDPReader {
    /// The largest SDP body read (a SIP message is at most 64 KiB anyway).
    static let maximumSize = SIPMessage.maximumSize

    static func parse(_ body: Data) throws(SDPParseError) -> SDPSession {
        guard body.count <= maximumSize else { throw SDPParseError(reason: "SDP body too large") }
        // Sixteen NULs, not one: libosip2's sdp_message_parse reads a few bytes past the terminating NUL on some
        // malformed bodies (a heap over-read found by Fuzz/fuzz-sdp); the padding keeps those reads inside the
        // buffer, and they see NULs, which end its loops. Kept as a regression input in Fuzz/Corpus/sdp.
        var text = [CChar](repeating: 0, count: body.count + 16)
        text.withUnsafeMutableBytes { _ = body.copyBytes(to: $0) }
        // memchr on the copy: `Data.contains` walks its iterator a byte at a time (~7,500 instructions per call).
        let hasNUL = text.withUnsafeBufferPointer { memchr($0.baseAddress!, 0, body.count) != nil }
        guard !hasNUL else { throw SDPParseError(reason: "NUL byte in SDP") }
        cosip_initialize()
        var pointer: UnsafeMutablePointer<sdp_message_t>?
        guard sdp_message_init(&pointer) == 0, let sdp = pointer else { throw SDPParseError(reason: "Out of memory") }
        defer { sdp_message_free(sdp) }
        let status = text.withUnsafeBufferPointer { sdp_message_parse(sdp, $0.baseAddress!) }
        guard status == 0 else { throw SDPParseError(reason: "Malformed SDP") }
        return try copy(sdp)
    }

    private static func copy(_ sdp: UnsafeMutablePointer<sdp_message_t>) throws(SDPParseError) -> SDPSession {
        guard string(sdp.pointee.v_version) == "0" else { throw SDPParseError(reason: "Unsupported SDP version") }
        guard let username = string(sdp.pointee.o_username), let idText = string(sdp.pointee.o_sess_id),
            let versionText = string(sdp.pointee.o_sess_version), let originAddress = string(sdp.pointee.o_addr),
            let sessionID = UInt64(idText), let sessionVersion = UInt64(versionText)
        else { throw SDPParseError(reason: "Malformed SDP origin") }
        let sessionConnection = sdp.pointee.c_connection.flatMap { string($0.pointee.c_addr) }
        let sessionDirection = direction(in: cosip_sdp_attributes(sdp))

        let medias = OSIPList.elements(cosip_sdp_medias(sdp)).map { $0.assumingMemoryBound(to: sdp_media_t.self) }
        guard let audio = medias.first(where: { string($0.pointee.m_media)?.lowercased() == "audio" }) else {
            throw SDPParseError(reason: "No audio stream in SDP")
        }
        guard let portText = string(audio.pointee.m_port), let port = SIPSyntax.port(portText),
            let proto = string(audio.pointee.m_proto)
        else { throw SDPParseError(reason: "Malformed SDP media line") }
        var codecs: [SDPCodec] = []
        var telephoneEvent: Int?
        var opusPayloadType: Int?
        let audioAttributes = attributes(of: audio)
        for element in OSIPList.elements(cosip_sdp_media_payloads(audio)) {
            let text = String(cString: element.assumingMemoryBound(to: CChar.self))
            guard let payloadType = SIPSyntax.decimal(text, limit: 127) else {
                throw SDPParseError(reason: "Malformed SDP payload type")
            }
            if let codec = SDPCodec(payloadType: payloadType), !codecs.contains(codec) { codecs.append(codec) }
            // RFC 7587: opus is always opus/48000/2 (the rtpmap as read keeps name and clock), at a dynamic type.
            if opusPayloadType == nil, payloadType >= 96, audioAttributes.rtpmap[payloadType]?.lowercased() == "opus/48000" {
                opusPayloadType = payloadType
                codecs.append(.opus)
            }
            if telephoneEvent == nil, payloadType >= 96,
                audioAttributes.rtpmap[payloadType]?.lowercased() == "telephone-event/8000"
            {
                telephoneEvent = payloadType
            }
        }
        let mediaConnection = OSIPList.elements(cosip_sdp_media_connections(audio)).lazy
            .compactMap { string($0.assumingMemoryBound(to: sdp_connection_t.self).pointee.c_addr) }.first
        guard let connection = mediaConnection ?? sessionConnection else {
            throw SDPParseError(reason: "No connection address in SDP")
        }
        // An unusable video line is left out (answered as no video), not a reason to refuse the call.
        let session = securityAttributes(in: cosip_sdp_attributes(sdp))
        let video = medias.first(where: { string($0.pointee.m_media)?.lowercased() == "video" })
            .flatMap { try? videoStream($0, session: session) }
        let stream = securityAttributes(in: cosip_sdp_media_attributes(audio))
        let ice = SDPICE(
            session: iceAttributes(in: cosip_sdp_attributes(sdp), readsCandidates: false),
            stream: iceAttributes(in: cosip_sdp_media_attributes(audio), readsCandidates: true))
        return SDPSession(
            origin: SDPOrigin(
                username: username, sessionID: sessionID, sessionVersion: sessionVersion, address: originAddress),
            connectionAddress: connection, audioPort: port, codecs: codecs,
            direction: direction(in: cosip_sdp_media_attributes(audio)) ?? sessionDirection ?? .sendrecv,
            sessionName: string(sdp.pointee.s_name) ?? "-", audioProtocol: SDPTransportProtocol(proto), video: video,
            telephoneEvent: telephoneEvent, ptime: audioAttributes.ptime, rtcpPort: audioAttributes.rtcpPort,
            opusPayloadType: opusPayloadType, crypto: stream.crypto,
            fingerprints: stream.fingerprintLines > 0 ? stream.fingerprints : session.fingerprints,
            setup: stream.setup ?? session.setup, rtcpMux: stream.rtcpMux, ice: ice)
    }

    /// The security attributes of one level (RFC 4568 crypto lines count at media level only; the caller takes
    /// what it needs of each level). Other attributes are passed over on their C name, without a Swift copy.
    private static func securityAttributes(in list: UnsafePointer<osip_list_t>) -> SDPSecurityAttributes {
        var attributes = SDPSecurityAttributes()
        for element in OSIPList.elements(list) {
            let attribute = element.assumingMemoryBound(to: sdp_attribute_t.self)
            guard let name = attribute.pointee.a_att_field,
                securityFields.contains(where: { strcasecmp(name, $0) == 0 }), let field = string(name)
            else { continue }
            attributes.read(field: field, value: string(attribute.pointee.a_att_value))
        }
        return attributes
    }

    /// The attributes ``SDPSecurityAttributes`` reads.
    private static let securityFields = ["crypto", "fingerprint", "setup", "rtcp-mux"]

    /// The ICE attributes of one level (candidates only at media level, `readsCandidates`), as the security ones: other
    /// attributes are passed over on their C name, and a value is copied only when it is read.
    private static func iceAttributes(in list: UnsafePointer<osip_list_t>, readsCandidates: Bool) -> SDPICEAttributes {
        var attributes = SDPICEAttributes(readsCandidates: readsCandidates)
        for element in OSIPList.elements(list) {
            let attribute = element.assumingMemoryBound(to: sdp_attribute_t.self)
            guard let name = attribute.pointee.a_att_field,
                SDPICEAttributes.fields.contains(where: { strcasecmp(name, $0) == 0 }), let field = string(name)
            else { continue }
            attributes.read(field: field) { string(attribute.pointee.a_att_value) }
        }
        return attributes
    }

    /// What Parley reads from a stream's attributes: rtpmap names with their clock rate ("telephone-event/8000"),
    /// ptime (1–1000 ms) and the rtcp port; a malformed one is ignored.
    private static func attributes(
        of media: UnsafeMutablePointer<sdp_media_t>
    ) -> (rtpmap: [Int: String], ptime: Int?, rtcpPort: Int?) {
        var rtpmap: [Int: String] = [:]
        var ptime: Int?
        var rtcpPort: Int?
        for element in OSIPList.elements(cosip_sdp_media_attributes(media)) {
            let attribute = element.assumingMemoryBound(to: sdp_attribute_t.self)
            guard let field = string(attribute.pointee.a_att_field)?.lowercased(),
                let value = string(attribute.pointee.a_att_value)
            else { continue }
            switch field {
            case "rtpmap":
                let parts = value.split(separator: " ", maxSplits: 1)
                if parts.count == 2, let type = SIPSyntax.decimal(String(parts[0]), limit: 127) {
                    rtpmap[type] = String(parts[1].prefix { $0 != "/" }) + "/" + String(parts[1].split(separator: "/").dropFirst().first ?? "")
                }
            case "ptime":
                if let value = SIPSyntax.decimal(value, limit: 1_000), value > 0 { ptime = value }
            case "rtcp":
                if let first = value.split(separator: " ").first, let port = SIPSyntax.port(String(first)), port > 0 {
                    rtcpPort = port
                }
            default:
                continue
            }
        }
        return (rtpmap, ptime, rtcpPort)
    }

    /// An `m=video` stream: port, transport, payload types named by their `a=rtpmap`, each format's `a=fmtp` and
    /// `a=rtcp-fb` (``SDPVideoParameters``, bounded), its `a=crypto` keys, DTLS fingerprints and role (its own, else
    /// the `session`'s; read for a UDP/TLS profile only), direction.
    private static func videoStream(
        _ media: UnsafeMutablePointer<sdp_media_t>, session: SDPSecurityAttributes
    ) throws(SDPParseError) -> SDPVideo {
        guard let portText = string(media.pointee.m_port), let port = SIPSyntax.port(portText),
            let transport = string(media.pointee.m_proto)
        else { throw SDPParseError(reason: "Malformed SDP video line") }
        var names: [Int: String] = [:]
        var formatLines: [Substring] = []
        for element in OSIPList.elements(cosip_sdp_media_attributes(media)) {
            let attribute = element.assumingMemoryBound(to: sdp_attribute_t.self)
            guard let field = string(attribute.pointee.a_att_field)?.lowercased(), let value = string(attribute.pointee.a_att_value)
            else { continue }
            if field == "fmtp" || field == "rtcp-fb", formatLines.count < SDPVideoParameters.maximumLines {
                formatLines.append(Substring(field + ":" + value))
            }
            guard field == "rtpmap" else { continue }
            let parts = value.split(separator: " ", maxSplits: 1)
            if parts.count == 2, let type = SIPSyntax.decimal(String(parts[0]), limit: 127) {
                names[type] = String(parts[1].prefix { $0 != "/" })
            }
        }
        var formats: [SDPVideoFormat] = []
        for element in OSIPList.elements(cosip_sdp_media_payloads(media)) {
            let text = String(cString: element.assumingMemoryBound(to: CChar.self))
            guard let type = SIPSyntax.decimal(text, limit: 127) else { throw SDPParseError(reason: "Malformed SDP payload type") }
            formats.append(SDPVideoFormat(payloadType: type, encodingName: names[type] ?? ""))
        }
        let security = securityAttributes(in: cosip_sdp_media_attributes(media))
        var video = SDPVideo(
            port: port, transport: transport, formats: formats, direction: direction(in: cosip_sdp_media_attributes(media)),
            crypto: security.crypto)
        // DTLS-SRTP (RFC 5763): the stream's fingerprints and role, else the session's.
        if video.transportProtocol.encryption == .dtls {
            video.fingerprints = security.fingerprintLines > 0 ? security.fingerprints : session.fingerprints
            video.setup = security.setup ?? session.setup
        }
        video.parameters = [:]
        for format in formats.prefix(SDPVideoParameters.maximumFormats) where !format.encodingName.isEmpty {
            let said = SDPVideoParameters(payloadType: format.payloadType, attributes: formatLines)
            if said != SDPVideoParameters() { video.parameters[format.payloadType] = said }
        }
        return video
    }

    /// The first direction attribute in a list of `sdp_attribute_t`.
    private static func direction(in list: UnsafePointer<osip_list_t>) -> SDPDirection? {
        for element in OSIPList.elements(list) {
            let attribute = element.assumingMemoryBound(to: sdp_attribute_t.self)
            if let name = string(attribute.pointee.a_att_field), let direction = SDPDirection(rawValue: name) {
                return direction
            }
        }
        return nil
    }

    private static func string(_ pointer: UnsafeMutablePointer<CChar>?) -> String? {
        pointer.map { String(decoding: UnsafeRawBufferPointer(start: $0, count: strlen($0)), as: UTF8.self) }
    }
}
