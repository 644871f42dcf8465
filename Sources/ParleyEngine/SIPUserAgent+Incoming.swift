import ConversationKit
import Foundation
import SIPMessages
import SIPSignaling
import ParleyIO
import SIPTransport

/// Incoming conversations: the INVITE is checked (Call-ID, tags, Require, its SDP, a push that announced it), the
/// conversation is reported, and a callee ``CallLeg`` takes it from there.
extension SIPUserAgent {
    func receiveNewInvite(_ request: SIPRequest, key: TransactionKey, source: SIPDestination) {
        guard let callID = request.headers.callID, let from = request.headers.from, from.tag != nil else {
            respond(to: request, key: key, status: 400, reason: "Missing From tag")
            return
        }
        if legIDs[callID] != nil {
            // The same INVITE by another path, or a Call-ID reused by mistake (RFC 3261 §8.2.2.2).
            respond(to: request, key: key, status: 482)
            return
        }
        // RFC 4028's `timer` (when session timers are on) and RFC 3891's `replaces` are the extensions we take.
        let unsupported = request.headers.values("Require").flatMap { $0.split(separator: ",") }
            .map { $0.trimmingCharacters(in: .whitespaces) }
            .filter { !$0.isEmpty && !(configuration.sessionTimer != nil && $0.lowercased() == "timer") && $0.lowercased() != "replaces" }
        if !unsupported.isEmpty {
            respond(to: request, key: key, status: 420, extra: ["Unsupported": unsupported.joined(separator: ", ")])
            return
        }
        if case .tooSmall(let minimum) = CallLeg.sessionTimerAnswer(to: request, in: self) {
            respond(to: request, key: key, status: 422, extra: ["Min-SE": String(minimum)])
            return
        }
        var offer: SDPSession?
        if !request.body.isEmpty {
            guard request.headers.contentType?.mediaType.lowercased() == "application/sdp" else {
                respond(to: request, key: key, status: 415, extra: ["Accept": "application/sdp"])
                return
            }
            do {
                offer = try parseOffer(request.body)
            } catch {
                respond(to: request, key: key, status: 488, reason: "Unusable SDP: \(error.reason)")
                return
            }
            guard let offer, canAnswer(offer) else {
                respond(to: request, key: key, status: 488, reason: "No common codec (PCMU or PCMA needed)")
                return
            }
        }
        var replaced: UUID?
        if let replaces = request.headers["Replaces"] {
            switch callReplaced(by: replaces) {
            case .success(let uuid): replaced = uuid
            case .failure(let refusal):
                log.info("refused an INVITE with Replaces: \(refusal.status) \(refusal.reason)")
                respond(to: request, key: key, status: refusal.status, reason: refusal.reason)
                return
            }
        }
        let pushed = replaced == nil ? pushedCalls.claim(callID: callID) : nil
        if let pushed, pushed.declined {
            log.info("\(pushed.call.uuid) \(callID): declined after its push; refusing the INVITE")
            respond(to: request, key: key, status: configuration.declineStatus)
            return
        }
        if let pushed, manager.conversation(pushed.call.uuid)?.state != .ringing {
            // The pushed conversation ended meanwhile (cancelled, failed): the late INVITE is not wanted.
            respond(to: request, key: key, status: 480)
            return
        }
        let handle = pushed?.call.handle ?? HandleMapping.caller(from: from, contact: request.headers.contacts.first)
        let uuid = pushed?.call.uuid ?? conversationUUIDs.next(at: now)
        let destination = Self.requestDestination(for: request, source: source)
        noteCall(from: destination.address.host, through: source)
        add(CallLeg.incoming(
            uuid: uuid, invite: request, key: key, callID: callID, localTag: SecureRandom.token(10), remoteHandle: handle,
            destination: destination, offer: offer))
        counters.incomingCalls += 1
        let sourceKey = SourceKey(host: source.address.host)
        if pushed == nil && !exemptSources.contains(sourceKey) {  // the ringing limit never applies to an exempt one
            ringingFrom[sourceKey, default: []].append(UUIDKey(uuid))
            sourceOfLeg[UUIDKey(uuid)] = sourceKey
        }
        if let pushed {
            // Already ringing since its push: the INVITE joins that conversation.
            log.info("\(uuid) \(callID): the INVITE for a pushed call arrived")
            drive(uuid) { leg, context in leg.ring(in: context) }
            if let join = pushed.pendingJoin { drive(uuid) { leg, context in leg.perform(join, in: context) } }
            return
        }
        do {
            try manager.reportNewIncomingConversation(
                uuid: uuid,
                update: Conversation.Update(
                    localMember: localHandle(called: request), members: [handle], activeRemoteMembers: [handle],
                    capabilities: capabilities(video: offer.map(takesVideo) == true),
                    account: account(called: request, from: source).map { accounts[$0].account.addressOfRecord.description }))
        } catch {
            legs[UUIDKey(uuid)] = nil
            legMedia[UUIDKey(uuid)] = nil
            legIDs[callID] = nil
            forgetSource(of: UUIDKey(uuid))
            onEvent?(.callRefused(uuid, callID: callID))
            log.info("refused an incoming call \(callID) from \(handle.value): \(error)")
            respond(to: request, key: key, status: 486, reason: "Busy Here (\(error))")
            return
        }
        // An offer with ICE, or none (our offer goes in the 200): our agent gathers while the call rings, so the answer
        // or the offer can carry every candidate (not for a call a delegate ended from inside the report: its leg is
        // gone).
        if offer.map({ $0.ice != nil && $0.audioPort > 0 }) ?? true, let media,
            media.offersICE(through: accountAddress(of: uuid)), legs[UUIDKey(uuid)] != nil,
            legMedia[UUIDKey(uuid)] == nil
        {
            let ours = mediaAddress(toward: offer?.connectionAddress, signalling: destination.address.host)
            let endpoint = newAudioEndpoint(for: uuid, at: ours, ice: offer == nil ? .controlling : .controlled)
            if endpoint.ice != nil {
                legMedia[UUIDKey(uuid)] = LegMedia(endpoint: endpoint)
            } else if endpoint.port != configuration.mediaPort {
                // No agent after all: the pair goes back, and the answer reserves as for any call.
                media.releaseEndpoint(endpoint, of: uuid)
            }
        }
        // A delegate may have answered or ended it from inside the report: then it rings no more.
        drive(uuid) { leg, context in leg.ring(in: context) }
        // Not when a delegate ended the new call from inside its report: the old one then goes on.
        if let replaced, legs[UUIDKey(uuid)] != nil { takeOver(replaced, with: uuid) }
    }

    /// Where requests inside an incoming call's dialog go: to the Contact when it names a numeric address on the
    /// transport the INVITE came over (a connection-oriented peer is reached on its connection), else where the
    /// INVITE came from.
    static func requestDestination(for request: SIPRequest, source: SIPDestination) -> SIPDestination {
        guard source.kind == .udp, let contact = request.headers.contacts.first?.uri else { return source }
        var host = contact.host
        if host.hasPrefix("[") && host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        guard HostResolver.isLiteral(host), contact.transport == nil || contact.transport?.lowercased() == "udp"
        else { return source }
        let port = contact.port ?? 5060
        guard (1...65535).contains(port) else { return source }
        return SIPDestination(kind: .udp, address: SIPPeerAddress(host: host, port: UInt16(port)))
    }
}
