internal import COpenSSL
import Foundation

/// A hash function of certificate fingerprints (RFC 8122 §5): what an `a=fingerprint` line names.
public enum CertificateDigestAlgorithm: String, Sendable, Hashable, CaseIterable {
    /// SHA-1 (20 bytes).
    case sha1 = "sha-1"
    /// SHA-256 (32 bytes): RFC 5763 §5 requires it of every endpoint.
    case sha256 = "sha-256"
    /// SHA-384 (48 bytes).
    case sha384 = "sha-384"
    /// SHA-512 (64 bytes).
    case sha512 = "sha-512"

    /// OpenSSL's digest.
    fileprivate var method: OpaquePointer? {
        switch self {
        case .sha1: EVP_sha1()
        case .sha256: EVP_sha256()
        case .sha384: EVP_sha384()
        case .sha512: EVP_sha512()
        }
    }
}

/// A certificate's fingerprint: the digest of its DER encoding under one hash function (RFC 8122). Public, not secret.
public struct CertificateFingerprint: Sendable, Hashable, CustomStringConvertible {
    /// The hash function.
    public var algorithm: CertificateDigestAlgorithm
    /// The digest.
    public var digest: [UInt8]

    /// A fingerprint.
    public init(algorithm: CertificateDigestAlgorithm, digest: [UInt8]) {
        self.algorithm = algorithm
        self.digest = digest
    }

    /// `sha-256 AB:CD:…`, as an `a=fingerprint` value writes it.
    public var description: String {
        algorithm.rawValue + " " + digest.map { byte in
            let hex = String(byte, radix: 16, uppercase: true)
            return byte < 16 ? "0" + hex : hex
        }.joined(separator: ":")
    }
}

extension [CertificateFingerprint] {
    /// Whether the certificate in `pem` (the first `BEGIN CERTIFICATE` block) is the one these fingerprints name
    /// (RFC 8122 §5): of the hash functions present, the strongest is used, and one fingerprint of it must equal the
    /// certificate's digest (compared in constant time). False when the PEM holds no certificate or the list is empty.
    public func match(certificatePEM pem: String) -> Bool {
        let strongestFirst: [CertificateDigestAlgorithm] = [.sha512, .sha384, .sha256, .sha1]
        guard let algorithm = strongestFirst.first(where: { known in contains { $0.algorithm == known } }),
            let digest = DTLSCertificate.digest(ofCertificatePEM: pem, algorithm: algorithm)
        else { return false }
        return contains { $0.algorithm == algorithm && P256.constantTimeEqual($0.digest, digest) }
    }
}

/// Why a DTLS certificate could not be read.
public struct DTLSCertificateError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What was wrong.
    public let description: String

    init(_ description: String) { self.description = description }
}

/// A node's DTLS-SRTP certificate: a self-signed X.509 certificate with its ECDSA P-256 key, kept as one PEM text
/// (certificate then PKCS#8 key: what GStreamer's `dtlssrtpdec` takes as `pem`). DTLS-SRTP trusts no CA: the peer
/// checks that our certificate's digest is the `a=fingerprint` our SDP gave (RFC 5763 §5), so a self-signed one is
/// what every softphone uses. The PEM holds the private key: it is never shown (the description names the
/// fingerprint only).
public final class DTLSCertificate: Sendable, CustomStringConvertible {
    /// The certificate and its private key, PEM.
    public let pem: String
    /// The SHA-256 fingerprint of the certificate (what our `a=fingerprint:sha-256` says).
    public let fingerprint: CertificateFingerprint

    /// How long a new certificate is valid: ten years (a peer that checks validity at all sees a current one; the
    /// fingerprint, not the date, is what authenticates it). One that expires within ``renewalMargin`` is renewed.
    public static let validityDays = 3_650
    /// A loaded certificate that expires sooner than this is replaced by a new one.
    public static let renewalMargin = Duration.seconds(30 * 86_400)

    private init(pem: String, fingerprint: CertificateFingerprint) {
        self.pem = pem
        self.fingerprint = fingerprint
    }

    /// A new self-signed certificate on a fresh P-256 key (subject `CN=commonName`).
    public static func generate(commonName: String = "parley") throws(DTLSCertificateError) -> DTLSCertificate {
        guard let key = copenssl_p256_generate() else {
            throw DTLSCertificateError("OpenSSL cannot make a P-256 key: \(OpenSSLErrors.take(or: "unavailable"))")
        }
        defer { EVP_PKEY_free(key) }
        guard let x509 = copenssl_self_signed(key, commonName, Self.validityDays) else {
            throw DTLSCertificateError("OpenSSL cannot sign a certificate: \(OpenSSLErrors.take(or: "unavailable"))")
        }
        defer { X509_free(x509) }
        let text = try Self.write { copenssl_write_certificate($0, x509) } + Self.write { copenssl_write_pkcs8($0, key) }
        guard let digest = Self.digest(of: x509, .sha256) else { throw DTLSCertificateError("no SHA-256 of the certificate") }
        return DTLSCertificate(pem: text, fingerprint: CertificateFingerprint(algorithm: .sha256, digest: digest))
    }

    /// The certificate and key in `pem` (a certificate block and an unencrypted private key block, either order).
    /// Refused: either missing, a key that is not the certificate's, a certificate that has expired or expires
    /// within `renewalMargin` (the caller makes a new one).
    public init(pem: String, renewalMargin: Duration = DTLSCertificate.renewalMargin) throws(DTLSCertificateError) {
        guard let x509 = Self.read(pem, copenssl_read_certificate) else {
            throw DTLSCertificateError("no certificate in the PEM: \(OpenSSLErrors.take(or: "none"))")
        }
        defer { X509_free(x509) }
        guard let key = Self.read(pem, copenssl_read_private_key) else {
            throw DTLSCertificateError("no private key in the PEM: \(OpenSSLErrors.take(or: "none"))")
        }
        defer { EVP_PKEY_free(key) }
        guard copenssl_certificate_fits(x509, key, Int(renewalMargin.components.seconds)) == 1 else {
            throw DTLSCertificateError("the key is not the certificate's, or the certificate expires within \(renewalMargin)")
        }
        guard let digest = Self.digest(of: x509, .sha256) else { throw DTLSCertificateError("no SHA-256 of the certificate") }
        self.pem = pem
        fingerprint = CertificateFingerprint(algorithm: .sha256, digest: digest)
    }

    /// The fingerprint only: the PEM holds the private key.
    public var description: String { "DTLSCertificate(\(fingerprint))" }

    /// The digest of the DER encoding of the first certificate in `pem` under `algorithm` (its RFC 8122
    /// fingerprint); nil when the text holds none.
    public static func digest(ofCertificatePEM pem: String, algorithm: CertificateDigestAlgorithm) -> [UInt8]? {
        guard let x509 = read(pem, copenssl_read_certificate) else {
            _ = OpenSSLErrors.take(or: "")
            return nil
        }
        defer { X509_free(x509) }
        return digest(of: x509, algorithm)
    }

    private static func digest(of x509: OpaquePointer, _ algorithm: CertificateDigestAlgorithm) -> [UInt8]? {
        var bytes = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        let length = Int(copenssl_certificate_digest(x509, algorithm.method, &bytes))
        return length > 0 ? Array(bytes.prefix(length)) : nil
    }

    /// What `reader` reads from a memory BIO holding `text`.
    private static func read(_ text: String, _ reader: (OpaquePointer?) -> OpaquePointer?) -> OpaquePointer? {
        let bytes = Array(text.utf8)
        guard let bio = BIO_new(BIO_s_mem()) else { return nil }
        defer { BIO_free(bio) }
        _ = BIO_write(bio, bytes, Int32(bytes.count))
        return reader(bio)
    }

    /// The text `writer` writes into a memory BIO.
    private static func write(_ writer: (OpaquePointer?) -> Int32) throws(DTLSCertificateError) -> String {
        guard let bio = BIO_new(BIO_s_mem()) else { throw DTLSCertificateError("out of memory") }
        defer { BIO_free(bio) }
        guard writer(bio) == 1 else { throw DTLSCertificateError("OpenSSL cannot write PEM: \(OpenSSLErrors.take(or: "?"))") }
        var data: UnsafeMutablePointer<CChar>?
        let length = copenssl_bio_contents(bio, &data)
        guard let data, length > 0 else { throw DTLSCertificateError("OpenSSL wrote an empty PEM") }
        return String(decoding: UnsafeRawBufferPointer(start: data, count: length), as: UTF8.self)
    }
}
