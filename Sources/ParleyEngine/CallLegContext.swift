import ConversationKit
import Foundation
import SIPMessages
import SIPSignaling
import SIPTransport

/// What a call leg asks of the world while it decides: how our messages look (Contact, Via, SDP), where in-dialog
/// requests go, what the transaction layer knows of a server transaction, whether an action is settled, the time, and
/// the random waits of glare.
/// Queries and message builders only: nothing here sends, schedules or changes state, so the leg's transitions stay
/// pure. ``SIPUserAgent`` is the context in the daemon; tests give a fixed one.
protocol CallLegContext {
    /// How the user agent behaves (ring timeout, auto-answer, timers, decline status, product).
    var configuration: EngineConfiguration { get }
    /// Wall-clock time, for the dates conversations carry.
    var now: Date { get }
    /// The headers that say what we support.
    var capabilityHeaders: SIPHeaders { get }

    /// A response to `request` with our Server header (and Contact when asked), a fresh To tag unless given.
    func response(
        to request: SIPRequest, key: TransactionKey, status: Int, toTag: String?, extra: SIPHeaders, body: SDPSession?,
        contact: Bool, reason: String?
    ) -> SIPResponse
    /// Our Contact header text for messages to `destination`.
    func contactHeader(for destination: SIPDestination, secure: Bool) -> String
    /// Our Contact address for requests to `destination`.
    func contactAddress(for destination: SIPDestination, secure: Bool) -> SIPAddress
    /// A Via with a fresh branch for a new client transaction to `destination`.
    func newVia(for destination: SIPDestination) -> SIPVia
    /// Our SDP answer to `offer` (or an offer when there is none) in `conversation`, the next version after
    /// `previous` (a first description reserves the call's RTP endpoint, at our address toward `peerHost`, the peer's
    /// signalling host, when the offer names no address of its own).
    func makeAnswer(
        to offer: SDPSession?, previous: SDPSession?, localHold: Bool, for conversation: UUID, toward peerHost: String?
    ) -> SDPSession
    /// Our SDP offer for a re-INVITE in `conversation`: the next version after `previous`, sendonly when holding, with
    /// a video stream when `video` (and this node takes video), the call's ICE as the media layer has it now.
    func makeOffer(after previous: SDPSession?, hold: Bool, video: Bool, for conversation: UUID) -> SDPSession
    /// The capabilities of a call of ours, with or without video (reported when an offer/answer turns video on or off).
    func capabilities(video: Bool) -> Conversation.Capabilities
    /// Whether a received offer is one we can answer (a common codec).
    func canAnswer(_ offer: SDPSession) -> Bool
    /// Where in-dialog requests go: the dialog's next hop when it is a numeric address on the same transport,
    /// else `fallback`.
    func destination(inDialog dialog: SIPDialog?, fallback: SIPDestination) -> SIPDestination
    /// Whether the server transaction `key` still takes a final response.
    func isProceeding(_ key: TransactionKey) -> Bool
    /// Where responses of server transaction `key` go.
    func responseDestination(_ key: TransactionKey) -> SIPDestination?
    /// Whether `action` is settled already (the manager fails an action whose deadline passed).
    func isSettled(_ action: ActionRef) -> Bool
    /// Where incoming calls to the account of `conversation` are forwarded now.
    func forwarding(for conversation: UUID) -> CallForwarding
    /// The wait before retrying our re-INVITE after 491 (RFC 3261 §14.1).
    func glareRetryDelay(isCallIDOwner: Bool) -> Duration
    /// The dialog's refusal of a request it did not take (481, 491, 500 with Retry-After).
    func rejection(_ verdict: DialogRequestVerdict, of request: SIPRequest) -> SIPResponse?
}

extension CallLegContext {
    /// A response with the defaults of the common case.
    func response(
        to request: SIPRequest, key: TransactionKey, status: Int, toTag: String? = nil, extra: SIPHeaders = [:],
        reason: String? = nil
    ) -> SIPResponse {
        response(to: request, key: key, status: status, toTag: toTag, extra: extra, body: nil, contact: false, reason: reason)
    }
}
