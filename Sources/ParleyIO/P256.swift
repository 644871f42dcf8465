internal import COpenSSL
import Foundation
import Synchronization

/// ECDSA over P-256 with SHA-256, through OpenSSL: the one place Parley's collaboration identity proofs touch it
/// (docs/collaboration.md). Public keys are 65-byte X9.63 uncompressed points (`0x04‖X‖Y`), signatures DER.
public enum P256 {
    /// The length of an uncompressed public point.
    public static let publicKeyLength = 65

    /// Whether `point` is an uncompressed point on the curve.
    public static func isValidPublicKey(_ point: [UInt8]) -> Bool { publicKey(point) != nil }

    /// Whether `signatureDER` is a valid ECDSA/SHA-256 signature of `message` by `publicKey`. Bad points and bad DER
    /// are `false`, like a wrong signature; ``isValidPublicKey(_:)`` tells the two apart.
    public static func verify(publicKey point: [UInt8], signatureDER: [UInt8], message: [UInt8]) -> Bool {
        guard !signatureDER.isEmpty, let key = publicKey(point) else { return false }
        guard let context = EVP_MD_CTX_new() else { return false }
        defer { EVP_MD_CTX_free(context) }
        guard EVP_DigestVerifyInit(context, nil, sha256Method.pointer, nil, key.pointer) == 1 else {
            _ = OpenSSLErrors.take(or: "")
            return false
        }
        // Only 1 is a good signature: 0 is a bad one, a negative value malformed DER or an internal error.
        let result = EVP_DigestVerify(context, signatureDER, signatureDER.count, message, message.count)
        if result != 1 { _ = OpenSSLErrors.take(or: "") }
        return result == 1
    }

    /// SHA-256 of `bytes`: the 32 raw bytes.
    public static func sha256(_ bytes: [UInt8]) -> [UInt8] {
        var digest = [UInt8](repeating: 0, count: 32)
        // SHA256() is OpenSSL's one-shot; it cannot fail on a valid buffer.
        bytes.withUnsafeBufferPointer { buffer in _ = SHA256(buffer.baseAddress, buffer.count, &digest) }
        return digest
    }

    /// Whether two byte strings are equal, in time that depends only on their length (CRYPTO_memcmp).
    public static func constantTimeEqual(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        guard !a.isEmpty else { return true }
        return CRYPTO_memcmp(a, b, a.count) == 0
    }

    /// SHA-256 fetched once (a fetch by name per signature costs a provider lookup each time).
    private static let sha256Method: OpenSSLHandle = {
        guard let method = EVP_MD_fetch(nil, "SHA256", nil) else { preconditionFailure("OpenSSL has no SHA-256") }
        return OpenSSLHandle(method) { EVP_MD_free($0) }
    }()

    /// Parsed public keys by their bytes: a device's key is parsed (and checked on the curve) once, not on every
    /// proof (parsing is about a third of a verification). Only valid points are kept; at most ``keyCacheSize``.
    private static let parsedKeys = Mutex(KeyCache())
    /// How many parsed keys are kept.
    public static let keyCacheSize = 1024

    private struct KeyCache: ~Copyable {
        var keys: [[UInt8]: OpenSSLHandle] = [:]
        var order: [[UInt8]] = []
    }

    private static func publicKey(_ point: [UInt8]) -> OpenSSLHandle? {
        // Checked before OpenSSL sees it: only the uncompressed form is a Parley public key.
        guard point.count == publicKeyLength, point[0] == 0x04 else { return nil }
        if let cached = parsedKeys.withLock({ $0.keys[point] }) { return cached }
        guard let key = copenssl_p256_public_key(point, point.count) else {
            _ = OpenSSLErrors.take(or: "")
            return nil
        }
        let handle = OpenSSLHandle(key) { EVP_PKEY_free($0) }
        parsedKeys.withLock { cache in
            guard cache.keys[point] == nil else { return }
            if cache.order.count >= keyCacheSize { cache.keys[cache.order.removeFirst()] = nil }
            cache.keys[point] = handle
            cache.order.append(point)
        }
        return handle
    }
}

/// An OpenSSL object freed when the last Swift reference goes. Used read-only once made (OpenSSL allows a key and
/// a digest method to be shared between threads for verification).
final class OpenSSLHandle: @unchecked Sendable {
    let pointer: OpaquePointer
    private let free: (OpaquePointer) -> Void

    init(_ pointer: OpaquePointer, free: @escaping (OpaquePointer) -> Void) {
        self.pointer = pointer
        self.free = free
    }

    deinit { free(pointer) }
}

/// Why a device key could not be read.
public enum DeviceKeyError: Error, Equatable, CustomStringConvertible {
    /// The text is not a PEM private key OpenSSL can read.
    case unreadable(String)
    /// The key is not an EC key on P-256.
    case notP256

    public var description: String {
        switch self {
        case .unreadable(let reason): "not a PKCS#8 PEM private key: \(reason)"
        case .notP256: "the private key is not an ECDSA P-256 key"
        }
    }
}

/// One device's ECDSA P-256 key pair: made once, kept as PKCS#8 PEM, used to sign proofs of identity.
public final class DeviceKey: @unchecked Sendable {
    // Immutable after init; OpenSSL allows concurrent signing with one EVP_PKEY.
    private let key: OpaquePointer
    /// The public key as the 65-byte uncompressed point.
    public let publicKey: [UInt8]

    private init(key: OpaquePointer) throws(DeviceKeyError) {
        guard copenssl_is_p256(key) == 1 else {
            EVP_PKEY_free(key)
            throw .notP256
        }
        var point = [UInt8](repeating: 0, count: P256.publicKeyLength)
        guard copenssl_p256_public_point(key, &point) == 1 else {
            EVP_PKEY_free(key)
            throw .unreadable(OpenSSLErrors.take(or: "no public point"))
        }
        self.key = key
        publicKey = point
    }

    deinit { EVP_PKEY_free(key) }

    /// A new random key pair.
    public static func generate() -> DeviceKey {
        // Key generation fails only when OpenSSL has no EC support or no entropy: the system is broken.
        guard let key = copenssl_p256_generate() else {
            preconditionFailure("OpenSSL cannot make a P-256 key: \(OpenSSLErrors.take(or: "unavailable"))")
        }
        do { return try DeviceKey(key: key) } catch { preconditionFailure("a fresh P-256 key is unusable: \(error)") }
    }

    /// The key in `pem` (PKCS#8, unencrypted).
    public convenience init(pem: String) throws(DeviceKeyError) {
        let bytes = Array(pem.utf8)
        guard let bio = BIO_new(BIO_s_mem()) else { throw .unreadable("out of memory") }
        defer { BIO_free(bio) }
        _ = BIO_write(bio, bytes, Int32(bytes.count))
        guard let key = copenssl_read_private_key(bio) else { throw .unreadable(OpenSSLErrors.take(or: "no key")) }
        try self.init(key: key)
    }

    /// The private key as PKCS#8 PEM ("BEGIN PRIVATE KEY").
    public var pem: String {
        guard let bio = BIO_new(BIO_s_mem()) else { preconditionFailure("out of memory") }
        defer { BIO_free(bio) }
        precondition(copenssl_write_pkcs8(bio, key) == 1, "OpenSSL cannot write PKCS#8: \(OpenSSLErrors.take(or: "?"))")
        var data: UnsafeMutablePointer<CChar>?
        let length = copenssl_bio_contents(bio, &data)
        guard let data, length > 0 else { preconditionFailure("OpenSSL wrote an empty PEM") }
        return String(decoding: UnsafeRawBufferPointer(start: data, count: length), as: UTF8.self)
    }

    /// An ECDSA/SHA-256 signature of `message`, DER encoded.
    public func sign(_ message: [UInt8]) -> [UInt8] {
        guard let context = EVP_MD_CTX_new() else { preconditionFailure("out of memory") }
        defer { EVP_MD_CTX_free(context) }
        precondition(
            EVP_DigestSignInit_ex(context, nil, "SHA256", nil, nil, key, nil) == 1,
            "OpenSSL cannot sign with P-256: \(OpenSSLErrors.take(or: "?"))")
        var length = 0
        precondition(EVP_DigestSign(context, nil, &length, message, message.count) == 1, "no signature length")
        var signature = [UInt8](repeating: 0, count: length)
        precondition(
            EVP_DigestSign(context, &signature, &length, message, message.count) == 1,
            "OpenSSL cannot sign: \(OpenSSLErrors.take(or: "?"))")
        return Array(signature.prefix(length))
    }
}
