import ConversationKit
import Foundation
import SIPMessages

/// What the driver last told the media handler about one leg.
struct LegMedia {
    /// The RTP port reserved for the leg's descriptions (given back when it is forgotten).
    var port: Int?
    /// The audio handed over last.
    var audio: NegotiatedAudio?
}

/// The legs' audio: ports for new descriptions, and the negotiated audio handed to the media handler whenever a
/// transition changed it (the legs decide SDP; what it means for RTP is read from their state here).
extension SIPUserAgent {
    /// The RTP port of a new call's first description: one the media handler reserved, else (no handler, or none
    /// free) the configured port.
    func newAudioPort() -> Int {
        guard let media else { return configuration.mediaPort }
        if let port = media.reservePort() { return port }
        log.error("no free RTP port: this call will have no audio")
        return configuration.mediaPort
    }

    /// Hands the leg's audio to the media handler when it changed, and notes the port its descriptions use.
    func syncMedia(_ uuid: UUID) {
        let key = UUIDKey(uuid)
        guard let (port, audio) = peek(uuid, { leg in
            leg.descriptions.map { described -> (Int?, NegotiatedAudio?) in
                let audio = described.remote.flatMap {
                    NegotiatedAudio(local: described.local, remote: $0, localHold: described.localHold)
                }
                return (described.local.audioPort, audio)
            } ?? (nil, nil)
        }) else { return }
        // A ringing leg has described nothing yet: nothing to keep (an INVITE flood leaves no entries).
        if port == nil, audio == nil, legMedia[key] == nil { return }
        var known = legMedia[key] ?? LegMedia()
        if known.port == nil, let port, port > 0, port != configuration.mediaPort { known.port = port }
        let changed = known.audio != audio
        known.audio = audio
        legMedia[key] = known
        if changed { media?.audioChanged(audio, for: uuid) }
    }
}
