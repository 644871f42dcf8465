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

    /// A registration of `addressOfRecord` at `registrar`.
    public init(
        registrar: SIPURI, addressOfRecord: SIPURI, credentials: DigestCredentials? = nil, expires: Int = 3600,
        contactParameters: SIPParameters = []
    ) {
        self.registrar = registrar
        self.addressOfRecord = addressOfRecord
        self.credentials = credentials
        self.expires = expires
        self.contactParameters = contactParameters
    }
}

/// Where the registration stands.
public enum RegistrationState: Sendable, Hashable, CustomStringConvertible {
    /// Not registered (not configured, or unregistered on shutdown).
    case unregistered
    /// A REGISTER is in flight.
    case registering
    /// Registered until the given time; a refresh goes out before then.
    case registered(until: Date)
    /// The last attempt failed; another follows after a back-off.
    case failed(reason: String)

    /// For logs.
    public var description: String {
        switch self {
        case .unregistered: "unregistered"
        case .registering: "registering"
        case .registered(let until): "registered until \(until.formatted(.iso8601))"
        case .failed(let reason): "failed: \(reason)"
        }
    }
}
