import ConversationKit
import Foundation
import ParleyIO
import SIPMessages
import SIPSignaling
import SIPTransport

/// What the call legs ask of the user agent while they decide (see ``CallLegContext``).
extension SIPUserAgent: CallLegContext {
    /// Wall-clock time, from the environment.
    var now: Date { environment.now }

    /// Our SDP answer (or offer, when the INVITE had none) for a remote description. A new call's RTP port is
    /// reserved once here (none for an offer that refuses the audio stream with port 0).
    func makeAnswer(
        to offer: SDPSession?, previous: SDPSession?, localHold: Bool, for conversation: UUID, toward peerHost: String?
    ) -> SDPSession {
        // Our address toward where the peer takes its media, else toward where its signalling comes from (a NAT's
        // mapping of us when that is the registrar).
        let offered = offer.map(\.connectionAddress).flatMap { RouteProbe.isWildcard($0) ? nil : $0 }
        let ours = mediaAddress(toward: offered ?? peerHost, signalling: peerHost)
        let origin = nextOrigin(after: previous, host: ours)
        let direction: SDPDirection = localHold ? .sendonly : .sendrecv
        // The call keeps its port; one whose audio was refused (port 0) takes one when a later offer brings it back:
        // the port it had before, if it had one (it is released only when the call ends).
        let reserved = legMedia[UUIDKey(conversation)]?.endpoint
        var kept = previous.map(Self.endpoint(of:)).flatMap { $0.port == 0 && (offer?.audioPort ?? 0) > 0 ? reserved : $0 }
        if let ice = kept?.ice, let offered = offer?.ice { kept?.ice = answerICE(to: offered, for: conversation) ?? ice }
        let endpoint =
            kept ?? (offer?.audioPort == 0
                ? MediaEndpoint(address: ours, port: 0) : newAudioEndpoint(
                    for: conversation, at: ours, ice: offer == nil ? .controlling : offer?.ice == nil ? nil : .controlled))
        if let offer, let security = answerSecurity(for: offer, previous: previous, of: conversation),
            var answer = offer.answer(
                origin: origin, connectionAddress: endpoint.address ?? ours, audioPort: endpoint.port,
                supportedCodecs: audioCodecs, localDirection: direction,
                videoPort: takesVideo(of: offer) ? videoPort(for: conversation) : nil, telephoneEvents: carriesTones(endpoint.port),
                ptime: media.map { _ in 20 }, rtcpPort: rtcpPort(for: endpoint), security: security,
                videoKeys: videoAnswerKeys(for: offer, previous: previous), videoCodecs: configuration.videoCodecs,
                videoDTLS: videoAnswerDTLS(for: conversation, offered: offer.video))
        {
            answer = Self.withoutPlainVideo(answer)
            // ICE only toward an offer with ICE (RFC 8839: an answer without it tells the offerer to go without).
            answer.ice = offer.ice == nil || answer.audioPort == 0 ? nil : endpoint.ice
            return answer
        }
        // No offer (an INVITE without SDP): ours, encrypted when the policy asks for it on any transport.
        let offer = describe(
            after: previous, hold: localHold, video: previous?.isVideo == true, endpoint: endpoint, host: ours, for: conversation)
        let policy = configuration.mediaEncryption
        // A re-INVITE without SDP in a call: protected as the call is.
        if let previous { return securedLike(offer, previous: previous) }
        if policy.offersDTLS, carriesDTLS { return securingVideo(of: offer.secured(ourDTLS(setup: .actpass)), previous: nil) }
        return securingVideo(
            of: carriesSRTP && (policy.required || policy.offer == .sdes) ? offer.secured(freshSDES()) : offer, previous: nil)
    }

    /// Our ICE in the answer to a later offer of a call with ICE: when the offer's credentials differ from those the
    /// peer gave before, it restarts ICE (RFC 8839 §4.4.1.1.1) and so do we; otherwise our credentials as they are now
    /// (new ones when our own restart's offer has not reached the peer yet). Nil: the media layer has no agent.
    func answerICE(to offered: SDPICE, for conversation: UUID) -> SDPICE? {
        let known = legMedia[UUIDKey(conversation)]?.audio?.remoteICE
        if let known, known.ufrag != offered.ufrag || known.pwd != offered.pwd {
            log.info("\(conversation): the peer restarts ICE (new credentials in its offer)")
            return media?.restartICE(for: conversation)
        }
        return media?.currentICE(for: conversation)
    }

    /// How we answer `offer`: SDES-keyed SRTP in kind (keeping the keys of our `previous` description, RFC 4568
    /// §7.1.4 lets a re-INVITE keep them), DTLS-SRTP in kind (our fingerprint, and the role ``answerRole(previous:)``
    /// gives), plain when plain is allowed; nil when we cannot (SRTP or DTLS without the media layer's elements, plain
    /// media refused): the offer gets 488.
    func answerSecurity(for offer: SDPSession, previous: SDPSession?, of conversation: UUID? = nil) -> SDPMediaSecurity? {
        switch offer.audioProtocol.encryption {
        case .plain?: return configuration.mediaEncryption.required ? nil : .plain
        case .sdes? where carriesSRTP:
            let kept = previous?.audioProtocol.encryption == .sdes ? previous?.crypto ?? [] : []
            guard case .sdes(let fresh) = freshSDES() else { return nil }
            return .sdes(kept + fresh)
        case .dtls? where carriesDTLS:
            // The role we have in the association now, whichever side offered it last (our previous description
            // says only `actpass` when it was an offer) — when the offer keeps it (the same certificate); a new one
            // gets `passive`, as a first answer does.
            if let conversation, let keying = legMedia[UUIDKey(conversation)]?.audio?.dtls {
                let kept = Set(keying.peerFingerprints) == Set(offer.fingerprints)
                return ourDTLS(setup: kept ? (keying.isClient ? .active : .passive) : .passive)
            }
            return ourDTLS(setup: Self.answerRole(previous: previous))
        default: return nil
        }
    }

    /// The role we take when answering an `actpass` DTLS offer: the one we had (RFC 8842: a re-INVITE keeps the
    /// DTLS association, a changed role would start a new one), else `passive`: the offerer starts the handshake once
    /// it has our answer. RFC 5763 §5 recommends `active` (the handshake then runs alongside the answer, saving half a
    /// round trip), but GStreamer 1.22's DTLS client sends its ClientHello in two fragments (255 and 72 bytes seen
    /// here), and linphone 5.1's mbedtls refuses a fragmented ClientHello: as the server we interoperate with
    /// linphone, baresip and ourselves alike (docs/media.md).
    static func answerRole(previous: SDPSession?) -> SDPSetupRole {
        guard let previous, previous.audioProtocol.isDTLS, let role = previous.setup, role.isClient != nil else { return .passive }
        return role
    }

    /// Our DTLS-SRTP attributes: the media layer's certificate fingerprints, and `setup`.
    func ourDTLS(setup: SDPSetupRole) -> SDPMediaSecurity {
        .dtls(fingerprints: media?.dtlsFingerprints ?? [], setup: setup)
    }

    /// Whether this node's media layer carries DTLS-SRTP (it has a certificate).
    var carriesDTLS: Bool { media?.dtlsFingerprints.isEmpty == false }

    /// SDES keys for every suite we offer, fresh from OpenSSL's RAND_bytes (AES_CM_128_HMAC_SHA1_80 first).
    func freshSDES() -> SDPMediaSecurity {
        .sdes(SDPCrypto.fresh { SecureRandom.bytes($0.keyLength) })
    }

    /// Whether this node's media layer carries SRTP.
    var carriesSRTP: Bool { media?.carriesSRTP == true }

    /// Our re-INVITE's offer: sendonly to hold, sendrecv to resume; a video stream when asked and supported. A video
    /// line the session had stays, with port 0 when video is off (RFC 3264 §8: m-lines are never removed).
    func makeOffer(after previous: SDPSession?, hold: Bool, video: Bool, for conversation: UUID) -> SDPSession {
        let ours = previous?.connectionAddress ?? mediaAddress(toward: nil)
        var endpoint = previous.map(Self.endpoint(of:)) ?? MediaEndpoint(address: ours, port: configuration.mediaPort)
        if endpoint.ice != nil, let current = media?.currentICE(for: conversation) { endpoint.ice = current }
        let offer = describe(after: previous, hold: hold, video: video, endpoint: endpoint, host: ours, for: conversation)
        guard let previous else { return securingVideo(of: offer, previous: nil) }
        return securedLike(offer, previous: previous)
    }

    /// A later offer of ours protected as the call's `previous` description was: an encrypted call stays encrypted,
    /// with the same keys and profile; a DTLS one offers actpass again (RFC 5763 §5), and the answer keeps the
    /// association by keeping its role. Its video likewise (``securingVideo(of:previous:)``).
    func securedLike(_ offer: SDPSession, previous: SDPSession) -> SDPSession {
        let feedback = previous.audioProtocol.hasFeedback
        switch previous.audioProtocol.encryption {
        case .sdes?: return securingVideo(of: offer.secured(.sdes(previous.crypto), feedback: feedback), previous: previous)
        case .dtls?: return securingVideo(of: offer.secured(ourDTLS(setup: .actpass), feedback: feedback), previous: previous)
        default: return securingVideo(of: offer, previous: previous)
        }
    }

    /// Where a description of ours puts the call's RTP (kept by every later description of the call).
    static func endpoint(of description: SDPSession) -> MediaEndpoint {
        MediaEndpoint(
            address: description.connectionAddress, port: description.audioPort, rtcpPort: description.rtcpPort, ice: description.ice)
    }

    /// Our offer at `endpoint` (`host` when it names no address).
    private func describe(
        after previous: SDPSession?, hold: Bool, video: Bool, endpoint: MediaEndpoint, host: String, for conversation: UUID
    ) -> SDPSession {
        let stream = video ? videoPort(for: conversation).map(ourVideo) : nil
        let kept = previous?.video.map { SDPVideo(port: 0, transport: $0.transport, formats: Array($0.formats.prefix(1))) }
        let audioPort = endpoint.port
        var offer = SDPSession(
            origin: nextOrigin(after: previous, host: host), connectionAddress: endpoint.address ?? host, audioPort: audioPort,
            codecs: audioCodecs,
            direction: hold ? .sendonly : .sendrecv, video: stream ?? kept,
            telephoneEvent: carriesTones(audioPort) ? previous?.telephoneEvent ?? Self.telephoneEventType : nil,
            ptime: media.map { _ in 20 }, rtcpPort: rtcpPort(for: endpoint),
            opusPayloadType: audioCodecs.contains(.opus) ? previous?.opusPayloadType ?? SDPCodec.opus.payloadType : nil)
        // A later offer repeats the call's credentials and candidates (no ICE restart, RFC 8839 §4.4.1.1).
        offer.ice = endpoint.ice
        return offer
    }

    /// The payload type our offers give RFC 4733 telephone-event (when calls carry media).
    static let telephoneEventType = 101

    /// Whether a description at `port` lists telephone-event: when calls carry media and the port is a reserved one
    /// (not the fallback of a call without a free port, which has no stream to put tones in).
    func carriesTones(_ port: Int) -> Bool {
        media?.sendsTonesInStream == true && port != configuration.mediaPort && port > 0
    }

    /// Where the call's video goes, when this node takes video (`supportsVideo`): the media layer's port for it when
    /// it carries video (reserved on the first ask), else two ports above the fallback audio port (signalling only).
    /// Nil: no video (none taken, or no free port).
    func videoPort(for conversation: UUID) -> Int? {
        guard manager.configuration.supportsVideo else { return nil }
        guard let media, media.carriesVideo else { return configuration.mediaPort + 2 }
        guard let port = media.videoPort(for: conversation) else {
            // A frontend that carries the media and named no video port: signalling only, at the fallback port.
            guard media.sendsTonesInStream else { return configuration.mediaPort + 2 }
            log.warning("\(conversation): no free RTP port pair for video: the call goes on without it")
            return nil
        }
        return port
    }

    /// `offer` with its video stream protected as its audio is: SRTP with keys of its own beside SDES audio (the
    /// ones `previous` gave it, else fresh), DTLS-SRTP beside DTLS-SRTP audio (our fingerprint, `actpass`: a
    /// handshake of its own on the video's ports), plain beside plain audio; refused (port 0) when we cannot.
    func securingVideo(of offer: SDPSession, previous: SDPSession?) -> SDPSession {
        guard let video = offer.video, video.isActive else { return offer }
        var secured = offer
        switch offer.audioProtocol.encryption {
        case .sdes?:
            let kept = previous?.video?.crypto ?? []
            guard !kept.isEmpty || carriesSRTP, case .sdes(let fresh) = freshSDES() else { secured.video?.port = 0; break }
            secured.video = video.secured(kept.isEmpty ? fresh : kept)
        case .dtls?:
            guard carriesDTLS else { secured.video?.port = 0; break }
            secured.video = video.secured(fingerprints: media?.dtlsFingerprints ?? [], setup: .actpass)
        case .plain?, nil: secured.video = video.secured(nil)
        }
        return secured
    }

    /// Whether we would take the video of an offer's `stream`: we take video, it is on, and we carry one of its
    /// formats (no port is reserved to ask).
    func offersVideoWeTake(_ stream: SDPVideo) -> Bool {
        manager.configuration.supportsVideo
            && stream.answer(
                port: 1, keys: stream.crypto, accepting: configuration.videoCodecs, dtls: videoAnswerDTLS(for: nil, offered: nil)).isActive
    }

    /// The video stream of an offer of ours at `port`: our codecs, in our order.
    func ourVideo(port: Int) -> SDPVideo {
        SDPVideo(port: port, formats: SDPVideoFormat.offered(configuration.videoCodecs))
    }

    /// Whether our answer to `offer` takes its video (a port is reserved only then): we take its stream, and it is
    /// not plain beside encrypted audio.
    func takesVideo(of offer: SDPSession) -> Bool {
        guard let stream = offer.video, offersVideoWeTake(stream) else { return false }
        return !offer.audioProtocol.isSecure || stream.transportProtocol.isSecure
    }

    /// Our keys for answering an SRTP video stream (those of our `previous` description first, RFC 4568 §7.1.4), none
    /// when it is not one or we carry no SRTP.
    func videoAnswerKeys(for offer: SDPSession, previous: SDPSession?) -> [SDPCrypto] {
        guard offer.video?.transportProtocol.encryption == .sdes, carriesSRTP, case .sdes(let fresh) = freshSDES() else { return [] }
        return (previous?.video?.crypto ?? []) + fresh
    }

    /// Our fingerprints and the role we prefer for answering a DTLS-SRTP video stream (none when we carry no DTLS):
    /// the role we have in `conversation`'s video association now, whichever side offered it, when the `offered`
    /// stream keeps it (the same certificate: RFC 8842, a re-INVITE keeps the association), else `passive`, as for
    /// audio (``answerRole(previous:)``).
    func videoAnswerDTLS(for conversation: UUID?, offered: SDPVideo?) -> (fingerprints: [SDPFingerprint], preferring: SDPSetupRole)? {
        guard carriesDTLS, let fingerprints = media?.dtlsFingerprints else { return nil }
        if let conversation, let keying = legMedia[UUIDKey(conversation)]?.video?.dtls, Set(keying.peerFingerprints) == Set(offered?.fingerprints ?? []) {
            return (fingerprints, keying.isClient ? .active : .passive)
        }
        return (fingerprints, .passive)
    }

    /// `answer` with its video refused (port 0) where it would go plain beside encrypted audio.
    static func withoutPlainVideo(_ answer: SDPSession) -> SDPSession {
        guard answer.audioProtocol.isSecure, let video = answer.video, video.isActive, !video.transportProtocol.isSecure else {
            return answer
        }
        var refused = answer
        refused.video = SDPVideo(port: 0, transport: video.transport, formats: Array(video.formats.prefix(1)))
        return refused
    }

    /// The manager's default capabilities, with video when asked and supported.
    func capabilities(video: Bool) -> Conversation.Capabilities {
        let defaults = manager.configuration.defaultCapabilities.subtracting(.video)
        return video && manager.configuration.supportsVideo ? defaults.union(.video) : defaults
    }

    /// Whether we share a codec with `offer` (PCMU, PCMA, or opus when the media layer carries it).
    func canAnswer(_ offer: SDPSession) -> Bool {
        guard let security = answerSecurity(for: offer, previous: nil) else { return false }
        return offer.answer(
            origin: nextOrigin(after: nil, host: "127.0.0.1"), connectionAddress: "127.0.0.1", audioPort: 1,
            supportedCodecs: audioCodecs, security: security) != nil
    }

    /// The `a=rtcp` port of a description at `port` (RFC 3605): the next, when calls carry media and the port is a
    /// real one (not the fallback of a call without one).
    func rtcpPort(for port: Int) -> Int? {
        media != nil && port > 0 && port != configuration.mediaPort ? port + 1 : nil
    }

    /// The RTCP port of `endpoint`'s descriptions: its own (ICE's default candidate for RTCP), else the next.
    func rtcpPort(for endpoint: MediaEndpoint) -> Int? {
        endpoint.port > 0 ? endpoint.rtcpPort ?? rtcpPort(for: endpoint.port) : nil
    }

    /// The codecs our descriptions list, in our order of preference.
    var audioCodecs: [SDPCodec] { media?.codecs ?? [.pcmu, .pcma] }

    func isProceeding(_ key: TransactionKey) -> Bool { transactions.serverState(key) == .proceeding }

    func responseDestination(_ key: TransactionKey) -> SIPDestination? { transactions.responseDestination(key) }

    func isSettled(_ action: ActionRef) -> Bool { action.action.isComplete }

    func forwarding(for conversation: UUID) -> CallForwarding {
        let address = accountAddress(of: conversation)
        return forwarding(forAccount: address.flatMap { aor in accounts.firstIndex { $0.account.addressOfRecord.description == aor } })
    }

    func glareRetryDelay(isCallIDOwner: Bool) -> Duration {
        var generator = SystemRandomNumberGenerator()
        return ReINVITEGlare.retryDelay(isCallIDOwner: isCallIDOwner, using: &generator)
    }

    func rejection(_ verdict: DialogRequestVerdict, of request: SIPRequest) -> SIPResponse? {
        var generator = SystemRandomNumberGenerator()
        return verdict.rejection(of: request, using: &generator)
    }
}
