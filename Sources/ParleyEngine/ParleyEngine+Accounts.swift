import ConversationKit
import Foundation

/// One account and where its registration stands.
public struct AccountRegistration: Sendable, Hashable {
    /// The account.
    public let account: Account
    /// Its registration's state.
    public let state: RegistrationState
}

extension ParleyEngine {
    /// Every account's registration, in the configuration's order (the default account first).
    public var registrations: [AccountRegistration] {
        onEngine { agent in
            agent.accounts.map { AccountRegistration(account: $0.account, state: $0.registration.state) }
        } ?? []
    }

    /// Makes the Start of conversation `uuid` go out through the account named `name` (its name or address of
    /// record) instead of the default one; call before performing the Start. False when no account has that name.
    public func placeThrough(account name: String, conversation uuid: UUID) -> Bool {
        guard let index = configuration.accounts.firstIndex(where: { $0 == configuration.account(named: name) })
        else { return false }
        startChoices.choose(for: uuid) { $0.account = index }
        return true
    }

    /// Makes the offer of conversation `uuid`'s Start use `encryption` instead of the node's policy; call before
    /// performing the Start. Why not, when the media layer cannot (SRTP or DTLS without its elements, or a frontend
    /// carrying the RTP), or when plain media is asked of a node that requires encryption.
    public func encryptStart(_ encryption: MediaEncryptionPolicy.Offer, conversation uuid: UUID) -> String? {
        guard offerableEncryption.contains(encryption) else {
            return "this parleyd cannot encrypt a call's media with \(encryption.rawValue)"
                + (externalMedia != nil ? " (the frontend carries the RTP: --media external)" : " (GStreamer's srtp and dtls elements are in gstreamer1.0-plugins-bad)")
        }
        if encryption == .none, configuration.mediaEncryption.required {
            return "this parleyd requires encrypted media (--require-media-encryption): a plain call is not allowed"
        }
        startChoices.choose(for: uuid) { $0.encryption = encryption }
        return nil
    }
}
