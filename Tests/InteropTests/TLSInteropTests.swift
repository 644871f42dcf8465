import Foundation
import Testing

/// SIP over TLS between two parleyd instances (Debian's sipp is built without TLS): a self-signed certificate for
/// "localhost", made with the openssl command for each test.
@Suite("Interop: TLS between parleyd instances", .serialized)
struct TLSInteropTests {
    /// A temporary directory with `cert.pem` and `key.pem` for CN=localhost.
    static func certificate() throws -> (directory: URL, cert: String, key: String) {
        let directory = FileManager.default.temporaryDirectory.appending(path: "parley-tls-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let cert = directory.appending(path: "cert.pem").path
        let key = directory.appending(path: "key.pem").path
        let openssl = try RunningProcess(
            try Interop.tool("openssl"),
            ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=localhost", "-days", "1",
             "-addext", "subjectAltName=DNS:localhost", "-keyout", key, "-out", cert],
            name: "openssl")
        guard try openssl.waitForExit() == 0 else { throw InteropError("openssl failed: \(openssl.standardError)") }
        return (directory, cert, key)
    }

    @Test("a call over TLS without verification (self-signed): answered, held, resumed, ended")
    func callOverTLS() throws {
        let tls = try Self.certificate()
        defer { try? FileManager.default.removeItem(at: tls.directory) }
        let callee = try Parleyd(["--auto-answer", "0"], tls: (tls.cert, tls.key))
        let calleePort = try #require(callee.tlsPort)
        let caller = try Parleyd(
            ["--call", "sip:parley@127.0.0.1:\(calleePort);transport=tls",
             "--script", "wait 100; hold; wait 100; resume; dtmf 7; end"],
            tls: (tls.cert, tls.key))
        try caller.waitForEnded(1)
        try callee.waitForEnded(1)
        #expect(caller.transitions == [["idle", "ringing", "joined", "paused", "joined", "leaving", "left (localEnded)"]])
        #expect(callee.transitions == [["ringing", "joining", "joined", "left (remoteEnded)"]])
        #expect(callee.process.lines.contains { $0.contains("sent tone 7") })
    }

    @Test("with --tls-verify: the right name is accepted, an address the certificate does not name fails the call")
    func verification() throws {
        let tls = try Self.certificate()
        defer { try? FileManager.default.removeItem(at: tls.directory) }
        let callee = try Parleyd(["--auto-answer", "0"], tls: (tls.cert, tls.key))
        let calleePort = try #require(callee.tlsPort)
        let verified = try Parleyd(
            ["--tls-verify", "--tls-ca", tls.cert, "--call", "sips:parley@localhost:\(calleePort)",
             "--script", "wait 100; end"],
            tls: (tls.cert, tls.key))
        try verified.waitForEnded(1)
        #expect(verified.transitions == [["idle", "ringing", "joined", "leaving", "left (localEnded)"]])

        let mismatched = try Parleyd(
            ["--tls-verify", "--tls-ca", tls.cert, "--call", "sip:parley@127.0.0.1:\(calleePort);transport=tls"],
            tls: (tls.cert, tls.key))
        try mismatched.waitForEnded(1)
        #expect(mismatched.transitions == [["idle", "left (failed)"]])
    }
}
