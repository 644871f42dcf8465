import Foundation
import SIPMessages
import SIPSignaling

/// Registering with a registrar (RFC 3261 §10) so that calls to our address of record reach us, with digest
/// authentication (MD5, SHA-256, SHA-512/256: RFC 8760) and refresh before expiry.
public struct RegistrationConfiguration: Sendable, Hashable {
    /// The registrar (`sip:registrar.example.com` or `sip:127.0.0.1:5060;transport=tcp`).
    public var registrar: SIPURI
    /// The address of record we register (`sip:alice@example.com`).
    public var addressOfRecord: SIPURI
    /// The credentials for digest challenges; nil to register without (a challenge then fails the registration).
    public var credentials: DigestCredentials?
    /// The binding lifetime we ask for, in seconds.
    public var expires: Int
    /// Extra Contact URI parameters (RFC 8599's pn-provider, pn-prid, pn-param go here).
    public var contactParameters: SIPParameters
    /// How a NAT's binding toward the registrar is kept open between REGISTERs; nil sends no keep-alives.
    public var keepAlive: KeepAlivePolicy?

    /// A registration of `addressOfRecord` at `registrar`.
    public init(
        registrar: SIPURI, addressOfRecord: SIPURI, credentials: DigestCredentials? = nil, expires: Int = 3600,
        contactParameters: SIPParameters = [], keepAlive: KeepAlivePolicy? = .standard
    ) {
        self.registrar = registrar
        self.addressOfRecord = addressOfRecord
        self.credentials = credentials
        self.expires = expires
        self.contactParameters = contactParameters
        self.keepAlive = keepAlive
    }
}

/// Keep-alives toward the registrar while registered, so that a NAT between us keeps the mapping our binding names
/// (a NAT forgets an idle UDP mapping after as little as 30 s; REGISTER refreshes come far less often). Over TCP and
/// TLS the ping is RFC 5626 §3.5.1's CRLFCRLF on the flow (the registrar answers CRLF); over UDP the same two CRLFs
/// in a datagram, which registrars drop unread (Kamailio drops datagrams too short to be SIP), or an OPTIONS, which
/// is answered, so its silence says the registrar or the path is gone (then we REGISTER again).
public struct KeepAlivePolicy: Sendable, Hashable {
    /// What a keep-alive is.
    public enum Method: String, Sendable, Hashable, CaseIterable {
        /// CRLFCRLF: on streams RFC 5626's ping, over UDP a datagram nobody answers.
        case crlf
        /// An OPTIONS request to the registrar, on any transport: answered, so a registrar gone quiet is noticed.
        case options
    }

    /// How long after the last keep-alive (or REGISTER) the next goes.
    public var interval: Duration
    /// What is sent.
    public var method: Method

    /// A keep-alive of `method` every `interval`.
    public init(interval: Duration, method: Method = .crlf) {
        self.interval = interval
        self.method = method
    }

    /// A CRLF keep-alive every 25 s: below the 30 s many NATs keep an idle UDP mapping (RFC 5626 §4.4.1 suggests
    /// 95–120 s for streams, which the shorter interval also serves).
    public static let standard = KeepAlivePolicy(interval: .seconds(25))
}

/// Where the registration stands.
public enum RegistrationState: Sendable, Hashable, CustomStringConvertible {
    /// Not registered (not configured, or unregistered on shutdown).
    case unregistered
    /// A REGISTER is in flight.
    case registering
    /// Registered until the given time; a refresh goes out before then. `mappedAddress` is our address and port as
    /// the registrar saw them (`HOST:PORT`, its Via `received`/`rport`) when a NAT changed them from what our Contact
    /// said: the address our Contact and SDP give peers through this registrar from then on.
    case registered(until: Date, mappedAddress: String? = nil)
    /// The last attempt failed; another follows after a back-off.
    case failed(reason: String)

    /// For logs.
    public var description: String {
        switch self {
        case .unregistered: "unregistered"
        case .registering: "registering"
        case .registered(let until, nil): "registered until \(until.formatted(.iso8601))"
        case .registered(let until, let mapped?): "registered until \(until.formatted(.iso8601)) as \(mapped) (behind a NAT)"
        case .failed(let reason): "failed: \(reason)"
        }
    }
}
