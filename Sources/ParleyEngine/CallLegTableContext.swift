import ConversationKit
import Foundation
import SIPMessages
import SIPSignaling
import SIPTransport

extension CallLegTable {
    /// A fixed context for walking the machine: a frozen clock, counted branches, the default configuration, every
    /// server transaction still proceeding, every action still unsettled, glare waits of exactly one second.
    final class TableContext: CallLegContext {
        let configuration = EngineConfiguration(
            listenAddresses: [ListenAddress(kind: .udp, host: "192.0.2.1", port: 5070)], autoAnswerDelay: .seconds(1))
        let now = Date(timeIntervalSince1970: 1_767_225_600)
        var capabilityHeaders: SIPHeaders { ["Allow": "INVITE, ACK, CANCEL, BYE, OPTIONS, INFO, MESSAGE, NOTIFY, REFER"] }
        private var branches = 0

        /// The server transaction of the representative INVITE.
        static let inviteKey = TransactionKey(serverRequest: SIPRequest(
            method: .invite, uri: SIPURI("sip:parley@192.0.2.1:5070")!,
            via: SIPVia(transport: "UDP", host: "192.0.2.2", port: 5062, branch: "z9hG4bK-table-invite"),
            from: SIPAddress(uri: SIPURI("sip:alice@192.0.2.2")!), to: SIPAddress(uri: SIPURI("sip:parley@192.0.2.1")!),
            callID: "table@192.0.2.2", cseq: 1))!
        /// The server transaction of every other request of the peer's.
        static let requestKey = TransactionKey(serverRequest: SIPRequest(
            method: .bye, uri: SIPURI("sip:parley@192.0.2.1:5070")!,
            via: SIPVia(transport: "UDP", host: "192.0.2.2", port: 5062, branch: "z9hG4bK-table-request"),
            from: SIPAddress(uri: SIPURI("sip:alice@192.0.2.2")!), to: SIPAddress(uri: SIPURI("sip:parley@192.0.2.1")!),
            callID: "table@192.0.2.2", cseq: 2))!

        /// The peer's offer: PCMU, sendrecv or (holding) sendonly.
        static func peerOffer(hold: Bool) -> SDPSession {
            SDPSession(
                origin: SDPOrigin(sessionID: 7, sessionVersion: hold ? 2 : 1, address: "192.0.2.2"),
                connectionAddress: "192.0.2.2", audioPort: 6000, direction: hold ? .sendonly : .sendrecv)
        }

        func response(
            to request: SIPRequest, key: TransactionKey, status: Int, toTag: String?, extra: SIPHeaders,
            body: SDPSession?, contact: Bool, reason: String?
        ) -> SIPResponse {
            request.makeResponse(statusCode: status, reasonPhrase: reason, toTag: toTag ?? "fresh-tag", headers: extra)
        }

        func contactHeader(for destination: SIPDestination, secure: Bool) -> String { "<sip:parley@192.0.2.1:5070>" }

        func contactAddress(for destination: SIPDestination, secure: Bool) -> SIPAddress {
            SIPAddress(uri: SIPURI("sip:parley@192.0.2.1:5070")!)
        }

        func newVia(for destination: SIPDestination) -> SIPVia {
            branches += 1
            return SIPVia(transport: "UDP", host: "192.0.2.1", port: 5070, branch: "z9hG4bK-ours-\(branches)")
        }

        func makeAnswer(
            to offer: SDPSession?, previous: SDPSession?, localHold: Bool, for conversation: UUID, toward peerHost: String?
        ) -> SDPSession {
            makeOffer(after: previous, hold: localHold, video: false, for: conversation)
        }

        func makeOffer(after previous: SDPSession?, hold: Bool, video: Bool, for conversation: UUID) -> SDPSession {
            SDPSession(
                origin: previous?.origin.nextVersion() ?? SDPOrigin(sessionID: 1, sessionVersion: 1, address: "192.0.2.1"),
                connectionAddress: "192.0.2.1", audioPort: 40_000, direction: hold ? .sendonly : .sendrecv)
        }

        func canAnswer(_ offer: SDPSession) -> Bool { true }
        func capabilities(video: Bool) -> Conversation.Capabilities { video ? Conversation.Capabilities.audioCall.union(.video) : .audioCall }
        func destination(inDialog dialog: SIPDialog?, fallback: SIPDestination) -> SIPDestination { fallback }
        func isProceeding(_ key: TransactionKey) -> Bool { true }
        func responseDestination(_ key: TransactionKey) -> SIPDestination? { CallLegTable.peer }
        func isSettled(_ action: ActionRef) -> Bool { false }
        func glareRetryDelay(isCallIDOwner: Bool) -> Duration { .seconds(1) }
        /// The table's ringing calls are forwarded on no answer after 20 s (to the transfer target).
        func forwarding(for conversation: UUID) -> CallForwarding { CallForwarding(noAnswer: SIPURI(CallLegTable.transferTarget.value)) }

        func rejection(_ verdict: DialogRequestVerdict, of request: SIPRequest) -> SIPResponse? {
            var generator = HighestDraw()
            return verdict.rejection(of: request, using: &generator)
        }
    }

    /// The same draw every time: every random range yields its highest value (a Retry-After of 10). Not all zeros:
    /// the standard library's rejection sampling would then never accept a draw.
    private struct HighestDraw: RandomNumberGenerator {
        mutating func next() -> UInt64 { .max }
    }
}
