import Foundation
import ParleyIO
import Testing

/// The node's DTLS-SRTP certificate: self-signed ECDSA P-256, kept as PEM, its SHA-256 fingerprint the digest of the
/// DER certificate (checked against the openssl command), and peer certificates matched against fingerprints.
@Suite("ParleyIO: DTLS certificates and fingerprints", .timeLimit(.minutes(3)))
struct DTLSCertificateTests {
    /// `openssl x509 -fingerprint -sha256` of the certificate in `pem`: its colon-separated hex digest.
    static func opensslFingerprint(_ pem: String) throws -> String {
        let file = NSTemporaryDirectory() + "parley-cert-\(UUID().uuidString).pem"
        try pem.write(toFile: file, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: file) }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
        process.arguments = ["x509", "-in", file, "-noout", "-fingerprint", "-sha256", "-text"]
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        return text
    }

    @Test("a new certificate: P-256, self-signed, its fingerprint openssl's, read back from its PEM alike; the description hides the key")
    func generated() throws {
        let certificate = try DTLSCertificate.generate(commonName: "parley-test")
        #expect(certificate.pem.contains("BEGIN CERTIFICATE") && certificate.pem.contains("BEGIN PRIVATE KEY"))
        let text = try Self.opensslFingerprint(certificate.pem)
        #expect(text.contains("sha256 Fingerprint=" + "\(certificate.fingerprint)".dropFirst("sha-256 ".count)), "\(text)")
        #expect(text.contains("prime256v1") || text.contains("P-256"), "an ECDSA P-256 key: \(text)")
        #expect(text.contains("Issuer: CN = parley-test") && text.contains("Subject: CN = parley-test"), "\(text)")
        let again = try DTLSCertificate(pem: certificate.pem)
        #expect(again.fingerprint == certificate.fingerprint)
        #expect(!"\(certificate)".contains("PRIVATE") && "\(certificate)".hasPrefix("DTLSCertificate(sha-256 "))
        #expect(try DTLSCertificate.generate().fingerprint != certificate.fingerprint, "each certificate its own")
    }

    @Test("a PEM without its key, with another certificate's key, or that is no PEM is refused")
    func refused() throws {
        let one = try DTLSCertificate.generate(), other = try DTLSCertificate.generate()
        let certificateOnly = String(one.pem[..<one.pem.range(of: "-----BEGIN PRIVATE KEY")!.lowerBound])
        let otherKey = String(other.pem[other.pem.range(of: "-----BEGIN PRIVATE KEY")!.lowerBound...])
        #expect(throws: DTLSCertificateError.self) { try DTLSCertificate(pem: certificateOnly) }
        #expect(throws: DTLSCertificateError.self) { try DTLSCertificate(pem: certificateOnly + otherKey) }
        #expect(throws: DTLSCertificateError.self) { try DTLSCertificate(pem: "not a certificate") }
    }

    @Test("fingerprints match the certificate they name, by the strongest hash present, and nothing else")
    func matching() throws {
        let certificate = try DTLSCertificate.generate(), other = try DTLSCertificate.generate()
        let sha1 = try #require(DTLSCertificate.digest(ofCertificatePEM: certificate.pem, algorithm: .sha1))
        let sha512 = try #require(DTLSCertificate.digest(ofCertificatePEM: certificate.pem, algorithm: .sha512))
        #expect(sha1.count == 20 && sha512.count == 64)
        #expect([certificate.fingerprint].match(certificatePEM: certificate.pem))
        #expect(![other.fingerprint].match(certificatePEM: certificate.pem))
        #expect([other.fingerprint, certificate.fingerprint].match(certificatePEM: certificate.pem), "one of several")
        #expect([CertificateFingerprint(algorithm: .sha1, digest: sha1)].match(certificatePEM: certificate.pem))
        // SHA-512 present: it decides, a matching SHA-256 beside a wrong SHA-512 does not pass.
        let wrong512 = CertificateFingerprint(algorithm: .sha512, digest: sha512.map { $0 ^ 0xFF })
        #expect(![certificate.fingerprint, wrong512].match(certificatePEM: certificate.pem))
        #expect([certificate.fingerprint, CertificateFingerprint(algorithm: .sha512, digest: sha512)].match(certificatePEM: certificate.pem))
        #expect(![CertificateFingerprint]().match(certificatePEM: certificate.pem))
        #expect(![certificate.fingerprint].match(certificatePEM: "garbage"))
    }
}
