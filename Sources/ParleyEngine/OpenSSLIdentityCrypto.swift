import Collaboration
import ParleyIO

/// The collaboration machines' cryptography, from OpenSSL through ParleyIO's ``P256``.
public struct OpenSSLIdentityCrypto: IdentityCrypto {
    public init() {}
    public func sha256(_ bytes: [UInt8]) -> [UInt8] { P256.sha256(bytes) }
    public func isValidPublicKey(_ point: [UInt8]) -> Bool { P256.isValidPublicKey(point) }
    public func verify(publicKey: [UInt8], signatureDER: [UInt8], message: [UInt8]) -> Bool {
        P256.verify(publicKey: publicKey, signatureDER: signatureDER, message: message)
    }
    public func randomBytes(_ count: Int) -> [UInt8] { SecureRandom.bytes(count) }
    public func constantTimeEqual(_ a: [UInt8], _ b: [UInt8]) -> Bool { P256.constantTimeEqual(a, b) }
}

/// A device key signs collaboration proofs.
extension DeviceKey: DeviceSigner {}
