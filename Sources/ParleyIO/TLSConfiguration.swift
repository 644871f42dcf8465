/// TLS settings: the certificate a server presents and how a client checks its peers.
public struct TLSConfiguration: Sendable, Hashable {
    /// PEM file with the certificate (chain) presented to peers; required to listen for TLS.
    public var certificatePath: String?
    /// PEM file with the private key of `certificatePath`; required to listen for TLS.
    public var privateKeyPath: String?
    /// Whether connections Parley opens check the server's certificate chain and name (RFC 5922). Off only for tests
    /// against self-signed peers. Servers do not ask clients for certificates.
    public var verifyPeer: Bool
    /// PEM file of trusted CA certificates; nil uses the system's default locations.
    public var caFilePath: String?

    /// A configuration from its parts; by default verifying peers against the system's CAs.
    public init(certificatePath: String? = nil, privateKeyPath: String? = nil, verifyPeer: Bool = true, caFilePath: String? = nil) {
        self.certificatePath = certificatePath
        self.privateKeyPath = privateKeyPath
        self.verifyPeer = verifyPeer
        self.caFilePath = caFilePath
    }
}

/// Why TLS could not be set up: a setting or file of ours, or the system.
package enum TLSError: Error, Sendable, Hashable {
    /// A TLS server needs both a certificate and a private key.
    case certificateMissing
    /// A PEM file could not be used: which file, and OpenSSL's reason.
    case file(path: String, reason: String)
    /// The private key does not belong to the certificate.
    case keyMismatch(certificatePath: String, privateKeyPath: String)
    /// The certificate of a peer cannot be checked against this name (OpenSSL refused it as a host or IP).
    case uncheckableName(String)
    /// A system or OpenSSL call failed.
    case system(IOError)
}
