/// The cryptography the collaboration machines need, injected so they stay pure: the engine passes OpenSSL's
/// (ParleyIO's `P256`), tests the same. Nothing here keeps state.
public protocol IdentityCrypto: Sendable {
    /// SHA-256 of `bytes` (32 bytes).
    func sha256(_ bytes: [UInt8]) -> [UInt8]
    /// Whether `point` is a 65-byte uncompressed P-256 point on the curve.
    func isValidPublicKey(_ point: [UInt8]) -> Bool
    /// Whether `signatureDER` is an ECDSA/SHA-256 signature of `message` by `publicKey`.
    func verify(publicKey: [UInt8], signatureDER: [UInt8], message: [UInt8]) -> Bool
    /// `count` bytes from a cryptographically secure generator (nonces).
    func randomBytes(_ count: Int) -> [UInt8]
    /// Equality in time that does not depend on where the bytes differ.
    func constantTimeEqual(_ a: [UInt8], _ b: [UInt8]) -> Bool
}

/// This device's signing key, as the machines see it: its public point and a way to sign.
public protocol DeviceSigner: Sendable {
    /// The 65-byte uncompressed public point.
    var publicKey: [UInt8] { get }
    /// An ECDSA/SHA-256 signature of `message`, DER.
    func sign(_ message: [UInt8]) -> [UInt8]
}
