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
        accountChoices.choose(index, for: uuid)
        return true
    }
}
