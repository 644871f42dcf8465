import ConversationKit
import Foundation
import SIPMessages
import SIPTransport
import Synchronization

/// Which account a call goes through: an outgoing one through the account its Start named (else the first), an
/// incoming one through the account it was called at.
extension SIPUserAgent {
    /// The account a Start goes out through (`choice`'s, else the default: the first); nil when there are none.
    func account(forStart choice: StartChoices.Choice) -> Int? {
        if let chosen = choice.account { return chosen }
        return accounts.isEmpty ? nil : 0
    }

    /// The account an incoming INVITE came in on, nil when none: the one whose Contact's `line` the Request-URI
    /// carries (what its registrar routed to that binding), else the one whose address of record the To names,
    /// else the first registered at the registrar the INVITE came from. A call straight from a peer that names
    /// none of them came in on no account.
    func account(called request: SIPRequest, from source: SIPDestination) -> Int? {
        guard !accounts.isEmpty else { return nil }
        if let line = request.uri.parameters["line"], let index = accountsByLine[line] { return index }
        if let to = request.headers.to?.uri, to.isSIP, let index = accountsByAddress[Self.addressKey(to)] { return index }
        return registrarAccounts[source.address.host]
    }

    /// How an address of record is looked up: `user@host`, the host in lower case.
    static func addressKey(_ uri: SIPURI) -> String { "\(uri.user ?? "")@\(uri.host.lowercased())" }
}

/// What frontends chose for Starts not yet placed, by conversation (the account, the encryption of the offer):
/// written on the frontend's thread before the Start is performed, taken on the engine's when it is placed.
final class StartChoices: Sendable {
    /// One Start's choices.
    struct Choice: Sendable, Hashable {
        /// The account's index, nil: the default.
        var account: Int?
        /// What the offer uses, nil: the node's policy.
        var encryption: MediaEncryptionPolicy.Offer?
    }

    private let chosen = Mutex<[UUID: Choice]>([:])

    /// Starts waiting to be placed at most; beyond, the oldest choices are dropped (a Start the manager refused
    /// never takes its choice).
    static let limit = 10_000

    /// Changes the choice for the Start of conversation `uuid`.
    func choose(for uuid: UUID, _ change: (inout Choice) -> Void) {
        chosen.withLock {
            if $0.count >= Self.limit, $0[uuid] == nil { $0.removeAll() }
            change(&$0[uuid, default: Choice()])
        }
    }

    /// The choices for `uuid`, once (nothing chosen: the defaults).
    func take(_ uuid: UUID) -> Choice {
        chosen.withLock { $0.removeValue(forKey: uuid) } ?? Choice()
    }
}
