import Foundation

/// A self-signed certificate and its key (0600) made by the openssl command in a new temporary directory, for tests
/// of TLS listeners.
public struct TLSCertificateFiles: Sendable {
    /// The certificate (PEM).
    public let certificate: String
    /// Its private key (PEM).
    public let key: String

    /// Why the openssl command could not make one.
    public struct Failure: Error, CustomStringConvertible {
        /// Its exit status.
        public let status: Int32
        /// For people.
        public var description: String { "openssl req exited \(status)" }
    }

    /// A P-256 certificate for CN=parley-test, valid a day, with `subjectAltName` (openssl's syntax:
    /// `DNS:phone.test,IP:192.0.2.7`) when given.
    public static func make(subjectAltName: String? = nil) throws -> TLSCertificateFiles {
        let directory = NSTemporaryDirectory() + "parley-tls-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let files = TLSCertificateFiles(certificate: directory + "/cert.pem", key: directory + "/key.pem")
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
        process.arguments = [
            "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-days", "1",
            "-subj", "/CN=parley-test", "-keyout", files.key, "-out", files.certificate,
        ] + (subjectAltName.map { ["-addext", "subjectAltName=\($0)"] } ?? [])
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { throw Failure(status: process.terminationStatus) }
        chmod(files.key, 0o600)
        return files
    }
}
