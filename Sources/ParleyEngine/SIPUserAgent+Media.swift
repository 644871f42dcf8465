import ConversationKit
import Foundation
import ParleyIO
import SIPMessages

/// What the driver last told the media handler about one leg.
struct LegMedia {
    /// The RTP endpoint reserved for the leg's descriptions (given back when it is forgotten).
    var endpoint: MediaEndpoint?
    /// The audio handed over last.
    var audio: NegotiatedAudio?
    /// The video handed over last.
    var video: NegotiatedVideo?
    /// Whether the peer still sends it (the media timeout).
    var inactivity = MediaInactivity()
    /// Why its media failed (DTLS-SRTP could not secure it, ICE found no path), while the call waits to be confirmed
    /// before it can be ended.
    var mediaFailure: (reason: Conversation.EndedReason, why: String)?
}

/// The legs' audio: ports for new descriptions, and the negotiated audio handed to the media handler whenever a
/// transition changed it (the legs decide SDP; what it means for RTP is read from their state here).
extension SIPUserAgent {
    /// The RTP endpoint of a new call's first description: one the media handler reserved (through an ICE agent in
    /// `ice`'s role when the handler offers ICE for the call's account), else (no handler, or nowhere to put the
    /// call's RTP) the configured port on the node's address.
    func newAudioEndpoint(for conversation: UUID, at address: String, ice: ICERole? = nil) -> MediaEndpoint {
        let fallback = MediaEndpoint(address: address, port: configuration.mediaPort)
        guard let media else { return fallback }
        let account = accountAddress(of: conversation)
        let role = media.offersICE(through: account) ? ice : nil
        guard var endpoint = media.reserveEndpoint(for: conversation, through: account, ice: role) else {
            if media.sendsTonesInStream {
                log.error("\(conversation): no free RTP port: this call will have no audio")
            } else {
                log.info("\(conversation): the frontend named no RTP address: this call offers port \(fallback.port)")
            }
            return fallback
        }
        endpoint.address = endpoint.address ?? address
        return endpoint
    }

    /// The address of record of the account a call goes through, as its conversation names it (set before its first
    /// description: when a Start is placed, or an incoming call is reported); nil: through none.
    func accountAddress(of conversation: UUID) -> String? { manager.conversation(conversation)?.account }

    /// Hands the leg's audio to the media handler when it changed, and notes the port its descriptions use.
    func syncMedia(_ uuid: UUID) {
        let key = UUIDKey(uuid)
        let required = configuration.mediaEncryption.required
        guard let (endpoint, described, unkeyed, video) = peek(uuid, { leg in
            leg.descriptions.map { described -> (MediaEndpoint?, NegotiatedAudio?, Bool, NegotiatedVideo?) in
                var audio = described.remote.flatMap {
                    NegotiatedAudio(local: described.local, remote: $0, localHold: described.localHold, requiresEncryption: required)
                }
                var video = audio == nil ? nil : described.remote.flatMap {
                    NegotiatedVideo(local: described.local, remote: $0, localHold: described.localHold)
                }
                // Our answer is out and unacknowledged: its INVITE may have come from a spoofed source.
                audio?.peerConfirmed = leg.stateName != .answering && leg.stateName != .ringing
                video?.peerConfirmed = audio?.peerConfirmed ?? false
                let unkeyed = described.remote.map {
                    audio == nil && NegotiatedAudio.lacksAgreedKeys(local: described.local, remote: $0, required: required)
                } ?? false
                return (MediaEndpoint(address: described.local.connectionAddress, port: described.local.audioPort), audio, unkeyed, video)
            } ?? (nil, nil, false, nil)
        }) else { return }
        if unkeyed {
            // An answer without the encryption our offer asked for (or required): the call carries no audio, and ends.
            environment.atEndOfTurn { [weak self] in
                self?.drive(uuid) { leg, context in
                    leg.hangUp(.failed, why: "the peer's description has no encryption we agreed on (docs/media.md)", in: context)
                }
            }
        }
        // A ringing leg has described nothing yet: nothing to keep (an INVITE flood leaves no entries).
        if endpoint == nil, described == nil, legMedia[key] == nil { return }
        var known = legMedia[key] ?? LegMedia()
        var audio = described
        if let remote = audio?.remoteICE { audio?.remoteICE = withoutOurListeners(remote) }
        // The ICE path is the media layer's news, not the descriptions': it stays until the layer says otherwise.
        audio?.icePath = known.audio?.icePath
        if known.endpoint == nil, let endpoint, endpoint.port > 0, endpoint.port != configuration.mediaPort {
            known.endpoint = endpoint
        }
        let changed = known.audio != audio, changedVisibly = known.audio?.visible != audio?.visible
        let videoChanged = known.video != video
        known.audio = audio
        known.video = video
        legMedia[key] = known
        defer { if known.mediaFailure != nil { endIfMediaFailed(uuid) } }
        if changed { media?.audioChanged(audio, for: uuid) }
        if videoChanged { media?.videoChanged(video, for: uuid) }
        if changedVisibly {
            if let encryption = audio?.encryption, manager.conversation(uuid)?.encryption == nil {
                try? manager.reportConversationEvent(.updated(Conversation.Update(encryption: encryption)), for: uuid)
            }
            if configuration.mediaTimeout != nil {
                legMedia[key]?.inactivity.audioChanged(audio, arrived: media?.packetsArrived(for: uuid), now: environment.uptime)
                if legMedia[key]?.inactivity.isWatching == true { scheduleMediaCheck() }
            }
        }
        if changedVisibly || videoChanged { onEvent?(.mediaChanged(uuid, audio, video: video)) }
    }

    /// The peer's ICE without the candidates that name one of our SIP listeners (counted as dropped): our agent's
    /// checks never go to our own signalling, whatever a peer (or a spoofed INVITE) writes.
    func withoutOurListeners(_ ice: SDPICE) -> SDPICE {
        var kept = ice
        kept.candidates = ice.candidates.filter { candidate in
            !configuration.listenAddresses.contains { listener in
                Int(listener.port) == candidate.port && (listener.host == candidate.address || RouteProbe.isWildcard(listener.host))
            }
        }
        kept.droppedCandidates += ice.candidates.count - kept.candidates.count
        return kept
    }

    /// The media layer's ICE path changed (a pair selected, the state moved): a `mediaChanged` says so.
    func icePathChanged(_ uuid: UUID, _ path: ICEPath) {
        let key = UUIDKey(uuid)
        guard var audio = legMedia[key]?.audio, audio.icePath != path else { return }
        audio.icePath = path
        legMedia[key]?.audio = audio
        onEvent?(.mediaChanged(uuid, audio, video: legMedia[key]?.video))
    }

    /// The call's media failed: `mediaSecurityFailed` (DTLS-SRTP: the peer presented another certificate than its
    /// SDP named, or the handshake never completed) or `iceFailed` (no candidate pair works, or consent was lost). A
    /// confirmed call ends with BYE as `reason`; one whose ACK has not come yet ends as soon as it is confirmed
    /// (``endIfMediaFailed(_:)``, from every later sync).
    func mediaFailed(_ uuid: UUID, reason: Conversation.EndedReason, why: String) {
        let key = UUIDKey(uuid)
        guard legMedia[key] != nil, legMedia[key]?.mediaFailure == nil else { return }
        log.error("\(uuid): \(reason == .iceFailed ? "ICE failed" : "media security failed"): \(why)")
        legMedia[key]?.mediaFailure = (reason, why)
        endIfMediaFailed(uuid)
    }

    /// The media layer restarted the call's ICE (consent was lost on its path): a re-INVITE offers our new
    /// credentials; a call that is not connected cannot take one and ends as `iceFailed`.
    func iceRestarted(_ uuid: UUID, why: String) {
        guard legMedia[UUIDKey(uuid)] != nil else { return }
        log.info("\(uuid): ICE restarts: \(why)")
        var offered = false
        drive(uuid) { leg, context in
            guard let effects = leg.requestICERestart(in: context) else { return [] }
            offered = true
            return effects
        }
        if !offered { mediaFailed(uuid, reason: .iceFailed, why: "\(why); the call cannot offer an ICE restart yet") }
    }

    /// Ends the call as its media failure says when its media failed and it is confirmed.
    func endIfMediaFailed(_ uuid: UUID) {
        let key = UUIDKey(uuid)
        guard let failure = legMedia[key]?.mediaFailure, peek(uuid, { $0.stateName == .confirmed }) == true else { return }
        legMedia[key]?.mediaFailure = nil
        drive(uuid) { leg, context in leg.hangUp(failure.reason, why: failure.why, in: context) }
    }

    /// Starts the media timeout's periodic check unless it runs.
    private func scheduleMediaCheck() {
        guard mediaCheckTimer == nil, let timeout = configuration.mediaTimeout else { return }
        mediaCheckTimer = environment.schedule(after: MediaInactivity.checkInterval(for: timeout)) { [weak self] in
            self?.checkMediaActivity()
        }
    }

    /// Reads each watched call's packet count; the calls whose count stood still for the media timeout end with BYE
    /// (`mediaTimeout`). The check runs again while any call is watched.
    func checkMediaActivity() {
        mediaCheckTimer = nil
        guard let timeout = configuration.mediaTimeout, let media else { return }
        let now = environment.uptime
        var timedOut: [UUID] = []
        for (key, known) in legMedia where known.inactivity.isWatching {
            var inactivity = known.inactivity
            if inactivity.check(arrived: media.packetsArrived(for: key.uuid), now: now, timeout: timeout) {
                timedOut.append(key.uuid)
            }
            legMedia[key]?.inactivity = inactivity
        }
        for uuid in timedOut {
            drive(uuid) { leg, context in
                leg.hangUp(.mediaTimeout, why: "no RTP or RTCP from the peer for \(timeout)", in: context)
            }
        }
        if legMedia.values.contains(where: \.inactivity.isWatching) { scheduleMediaCheck() }
    }
}
