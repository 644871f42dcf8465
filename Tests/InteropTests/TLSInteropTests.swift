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

    @Test("a call over TLS with --tls-insecure (a certificate that names another host): answered, held, resumed, ended")
    func callOverTLS() throws {
        let tls = try Self.certificate()
        defer { try? FileManager.default.removeItem(at: tls.directory) }
        let callee = try Parleyd(["--auto-answer", "0"], tls: (tls.cert, tls.key))
        let calleePort = try #require(callee.tlsPort)
        let caller = try Parleyd(
            ["--tls-insecure", "--call", "sip:parley@127.0.0.1:\(calleePort);transport=tls",
             "--script", "wait 100; hold; wait 100; resume; dtmf 7; end"],
            tls: (tls.cert, tls.key))
        try caller.waitForEnded(1)
        try callee.waitForEnded(1)
        #expect(caller.transitions == [["idle", "ringing", "joined", "paused", "joined", "leaving", "left (localEnded)"]])
        #expect(callee.transitions == [["ringing", "joining", "joined", "left (remoteEnded)"]])
        #expect(callee.process.lines.contains { $0.contains("sent tone 7") })
    }

    @Test("verified by default: the right name with its CA is accepted; another name, or no CA for it, fails the call")
    func verification() throws {
        let tls = try Self.certificate()
        defer { try? FileManager.default.removeItem(at: tls.directory) }
        let callee = try Parleyd(["--auto-answer", "0"], tls: (tls.cert, tls.key))
        let calleePort = try #require(callee.tlsPort)
        let verified = try Parleyd(
            ["--tls-ca", tls.cert, "--call", "sips:parley@localhost:\(calleePort)", "--script", "wait 100; end"],
            tls: (tls.cert, tls.key))
        try verified.waitForEnded(1)
        #expect(verified.transitions == [["idle", "ringing", "joined", "leaving", "left (localEnded)"]])

        // The certificate names localhost, not 127.0.0.1: refused, though its CA is trusted.
        let mismatched = try Parleyd(
            ["--tls-ca", tls.cert, "--call", "sip:parley@127.0.0.1:\(calleePort);transport=tls"], tls: (tls.cert, tls.key))
        try mismatched.waitForEnded(1)
        #expect(mismatched.transitions == [["idle", "left (failed)"]])

        // Without --tls-ca only the system's CAs are trusted: a self-signed certificate is refused.
        let untrusted = try Parleyd(
            ["--call", "sips:parley@localhost:\(calleePort)"], tls: (tls.cert, tls.key), trustingOwnCertificate: false)
        try untrusted.waitForEnded(1)
        #expect(untrusted.transitions == [["idle", "left (failed)"]])
        #expect(callee.transitions.count == 1, "only the verified call reached the callee: \(callee.transitions)")

        // The old flag is still taken; the opt-out and a CA together are a contradiction.
        let oldFlag = try Parleyd(["--tls-verify", "--tls-ca", tls.cert])
        #expect(oldFlag.process.process.isRunning)
        let contradiction = try RunningProcess(
            try Interop.binary("parleyd"), ["--tls-insecure", "--tls-ca", tls.cert, "--no-control", "--no-history"],
            name: "parleyd --tls-insecure --tls-ca")
        #expect(try contradiction.waitForExit() == 64)
    }

    @Test("TLS 1.2 takes only ECDHE with AEAD ciphers: static RSA and CBC suites are refused")
    func cipherSuites() throws {
        let tls = try Self.certificate()
        defer { try? FileManager.default.removeItem(at: tls.directory) }
        let callee = try Parleyd([], tls: (tls.cert, tls.key))
        let port = try #require(callee.tlsPort)
        func handshake(_ cipher: String) throws -> Bool {
            let client = try RunningProcess(
                try Interop.tool("openssl"),
                ["s_client", "-connect", "127.0.0.1:\(port)", "-tls1_2", "-cipher", cipher, "-brief"], name: "openssl s_client")
            // Its standard input is empty: it ends right after the handshake.
            let status = try client.waitForExit(timeout: .seconds(10))
            return status == 0 && (client.lines + [client.standardError]).joined().contains("Cipher")
        }
        #expect(try handshake("ECDHE-RSA-AES128-GCM-SHA256"))
        #expect(try handshake("ECDHE-RSA-CHACHA20-POLY1305"))
        for weak in ["AES128-SHA", "AES256-GCM-SHA384", "ECDHE-RSA-AES128-SHA", "ECDHE-RSA-AES256-SHA384"] {
            #expect(try !handshake(weak), "\(weak) was accepted")
        }
    }
}
