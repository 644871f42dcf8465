import ConversationKit
import Foundation
import ParleyEngine
import SIPMessages
import Testing

/// A media handler that offers ICE for the calls of one account only, and writes down the account and ICE role each
/// reservation names (as a node with per-account ICE settings is asked).
final class AccountMedia: CallMediaHandler {
    /// The address of record whose calls get ICE.
    let iceAccount: String
    /// Each reservation's account and role, in order.
    var reservations: [String] = []
    private var next = 50_000

    init(iceAccount: String) { self.iceAccount = iceAccount }

    func reserveEndpoint(for conversation: UUID) -> MediaEndpoint? {
        defer { next += 2 }
        return MediaEndpoint(port: next)
    }

    func reserveEndpoint(for conversation: UUID, through account: String?, ice: ICERole?) -> MediaEndpoint? {
        reservations.append("\(account ?? "no account") \(ice.map { "\($0)" } ?? "without ICE")")
        var endpoint = reserveEndpoint(for: conversation)
        if ice != nil {
            let host = SDPCandidate(attributeValue: "1 1 UDP 2130706431 127.0.0.1 \(endpoint?.port ?? 0) typ host")
            endpoint?.ice = SDPICE(ufrag: "ourUfrag", pwd: "ourPasswordOurPassword22", candidates: host.map { [$0] } ?? [])
        }
        return endpoint
    }

    func offersICE(through account: String?) -> Bool { account == iceAccount }
    func releaseEndpoint(_ endpoint: MediaEndpoint, of conversation: UUID) {}
    func audioChanged(_ audio: NegotiatedAudio?, for conversation: UUID) {}
    func muteChanged(_ muted: Bool, for conversation: UUID) {}
    func sendTones(_ digits: String, for conversation: UUID) {}
}

/// The media handler learns which account each call goes through, so a node can give each account's calls its own
/// ICE (docs/nat.md) while the engine knows nothing of ICE's servers.
@Suite("Engine: each call's account, as the media layer is told it")
struct AccountMediaTests {
    /// An offer with ICE (the peer's credentials and one host candidate).
    static let iceOffer = PeerMessages.offer
        + "a=ice-ufrag:peerUfrag\na=ice-pwd:peerPasswordPeerPassword22\na=candidate:1 1 UDP 2130706431 127.0.0.1 6000 typ host\n"

    @Test("a Start through the account that has ICE offers candidates, one through another does not; an incoming call's reservation names the account called, and only that account's calls answer with ICE")
    func accountPerCall() throws {
        let media = AccountMedia(iceAccount: "sip:alice@work.test")
        let harness = try EngineHarness(media: media) { $0.accounts = [AccountTests.work, AccountTests.home] }

        try harness.manager.perform([.start(handles: [OutgoingCallTests.bob])])
        let viaWork = try #require(harness.sent().first { $0.request?.method == .invite })
        #expect(viaWork.bodyText.contains("a=ice-ufrag:ourUfrag"), "work's call offers ICE: \(viaWork.bodyText)")
        let viaHome = ConversationAction.start(handles: [OutgoingCallTests.bob])
        #expect(harness.engine.placeThrough(account: "home", conversation: viaHome.conversationUUID))
        try harness.manager.perform([viaHome])
        let homeInvite = try #require(harness.sent().first { $0.request?.method == .invite })
        #expect(!homeInvite.bodyText.contains("a=ice-"), "home's call offers none: \(homeInvite.bodyText)")
        #expect(media.reservations == ["sip:alice@work.test controlling", "sip:alice@home.test without ICE"])

        // In on each account (by its To), both offering ICE: work's agent gathers while it rings, home's has none.
        for (index, to) in ["sip:alice@work.test", "sip:alice@home.test"].enumerated() {
            let invite = PeerMessages.invite(callID: "in-\(index)@peer", branch: "z9hG4bK-in-\(index)")
                .replacingOccurrences(of: "To: <sip:parley@127.0.0.1:5070>", with: "To: <\(to)>")
            harness.deliver(invite, body: Self.iceOffer)
            let uuid = try #require(harness.manager.conversations.first { harness.engine.callID(of: $0.uuid) == "in-\(index)@peer" }?.uuid)
            #expect(harness.manager.conversation(uuid)?.account == to)
            try harness.manager.perform([.join(conversationUUID: uuid)])
            let ok = try #require(harness.sent().first { $0.statusCode == 200 })
            #expect(ok.bodyText.contains("a=ice-ufrag:ourUfrag") == (index == 0), "\(to): \(ok.bodyText)")
        }
        #expect(media.reservations.suffix(2) == ["sip:alice@work.test controlled", "sip:alice@home.test without ICE"])
    }
}
