import Foundation
import ParleyIO
import SIPMessages

/// One SIP account: an address of record registered at its registrar, with what calls through it need — the
/// outbound proxy they go to first, the name they show, where phone numbers are dialled. A parleyd holds one or
/// more (``EngineConfiguration/accounts``); each registers on its own, an outgoing call goes out through the one it
/// names (else the first), and an incoming call carries the one it came in on (``Conversation/account``).
public struct Account: Sendable, Hashable {
    /// What the frontend names it by (`work`, `home`); the address of record when the configuration gives none.
    public var name: String
    /// The registration: address of record, registrar, credentials, expiry, keep-alives.
    public var registration: RegistrationConfiguration
    /// Where this account's out-of-dialog requests go first (a pre-loaded Route with `;lr`); nil: the engine's
    /// ``EngineConfiguration/outboundProxy``, if any.
    public var outboundProxy: SIPURI?
    /// The display name in its From; nil: the engine's ``EngineConfiguration/displayName``.
    public var displayName: String?
    /// The domain phone numbers are dialled at through it; nil: the engine's ``EngineConfiguration/phoneDomain``,
    /// else the address of record's domain.
    public var phoneDomain: String?
    /// Where calls made to this account are forwarded; nil: the engine's (``EngineConfiguration/forwarding``).
    public var forwarding: CallForwarding?

    /// An account registering `registration`, named `name` (default: its address of record).
    public init(
        name: String? = nil, registration: RegistrationConfiguration, outboundProxy: SIPURI? = nil,
        displayName: String? = nil, phoneDomain: String? = nil, forwarding: CallForwarding? = nil
    ) {
        self.forwarding = forwarding
        self.name = name ?? registration.addressOfRecord.description
        self.registration = registration
        self.outboundProxy = outboundProxy
        self.displayName = displayName
        self.phoneDomain = phoneDomain
    }

    /// The address of record, as conversations and history records name the account.
    public var addressOfRecord: SIPURI { registration.addressOfRecord }

    /// The address of record's domain: where a bare user name is dialled; nil when it has none.
    public var domain: String? { addressOfRecord.host.isEmpty ? nil : addressOfRecord.host }

    /// The `line` parameter of this account's Contact when the engine holds several (Snom's convention): the
    /// registrar gives it back in the Request-URI of the calls it routes to that binding, so an incoming call is
    /// told apart even when its To names someone else (a forwarded call, an alias). Stable across restarts: eight
    /// hex digits of the address of record's SHA-256.
    public var line: String {
        String(MessageDigest.sha256(Data(addressOfRecord.description.lowercased().utf8)).prefix(8))
    }

    /// Whether `uri` is this account's address of record (the user exactly, the host without regard to case).
    func isAddressOfRecord(_ uri: SIPURI) -> Bool {
        uri.user == addressOfRecord.user && uri.host.lowercased() == addressOfRecord.host.lowercased()
    }
}

extension EngineConfiguration {
    /// The one-account short form (`parleyd --register … --aor …`): the first account's registration; setting it
    /// makes it the only account (nil: none).
    public var registration: RegistrationConfiguration? {
        get { accounts.first?.registration }
        set { accounts = newValue.map { [Account(registration: $0)] } ?? [] }
    }

    /// The account named `name` (its name or its address of record), nil when none is.
    public func account(named name: String) -> Account? {
        accounts.first { $0.name == name } ?? accounts.first { $0.addressOfRecord.description == name }
            ?? SIPURI(name).flatMap { uri in accounts.first { $0.isAddressOfRecord(uri) } }
    }
}
