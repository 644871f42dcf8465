import Foundation
import Glibc
import Testing

@testable import SIPTransport
@testable import ParleyIO
import ParleyTestSupport

/// A self-signed certificate for "localhost" and its key, made once per test run with the openssl command, plus a
/// key that does not match it.
struct TestCertificate: Sendable {
    let directory: String
    var certificate: String { directory + "/cert.pem" }
    var key: String { directory + "/key.pem" }
    var otherKey: String { directory + "/other-key.pem" }

    static let shared: Result<TestCertificate, CertificateError> = make()

    struct CertificateError: Error, Sendable {
        let message: String
    }

    private static func make() -> Result<TestCertificate, CertificateError> {
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("parley-tls-\(getpid())-\(SecureRandom.token(8))").path
        do {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            let made = TestCertificate(directory: directory)
            try run([
                "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=localhost", "-days", "1",
                "-addext", "subjectAltName=DNS:localhost", "-keyout", made.key, "-out", made.certificate,
            ])
            try run(["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", made.otherKey])
            return .success(made)
        } catch {
            return .failure(CertificateError(message: "\(error)"))
        }
    }

    private static func run(_ arguments: [String]) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
        process.arguments = arguments
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw CertificateError(message: "openssl \(arguments.first ?? "") exited \(process.terminationStatus)")
        }
    }

    /// The server configuration (certificate and key).
    var server: TLSConfiguration { TLSConfiguration(certificatePath: certificate, privateKeyPath: key) }
}

@Suite("TLS")
struct TLSTests {
    let ok = Data("SIP/2.0 200 OK\r\nContent-Length: 0\r\n\r\n".utf8)

    private func server(_ loop: EventLoop) throws -> (SIPTransport, EventRecorder<InboundSIPMessage>, ListenAddress) {
        let certificate = try TestCertificate.shared.get()
        let (transport, inbox) = makeTransport(loop, tls: certificate.server)
        let address = try transport.listenSync(ListenAddress(parsing: "tls://127.0.0.1:0"))
        return (transport, inbox, address)
    }

    @Test("a request over TLS and its reply over the same connection (no verification)")
    func roundTrip() throws {
        let loop = try makeLoop()
        defer { loop.shutdown() }
        let (server, serverInbox, address) = try server(loop)
        let (client, clientInbox) = makeTransport(loop, tls: TLSConfiguration(verifyPeer: false))
        let destination = SIPDestination(kind: .tls, address: SIPPeerAddress(host: "127.0.0.1", port: address.port))
        let requests = (0..<5).map { sipMessage("tls-\($0)", body: String(repeating: "t", count: $0 * 5000), transport: "TLS") }
        loop.execute {
            for request in requests { client.send(request, to: destination) }
        }
        let received = try #require(serverInbox.wait(for: 5))
        #expect(received.map(\.bytes) == requests)
        #expect(received[0].kind == .tls)
        #expect(received[0].connection != nil)

        server.sendSoon(ok, to: received[0].replyDestination)
        let reply = try #require(clientInbox.first())
        #expect(reply.bytes == ok)
        #expect(reply.kind == .tls)
        let clientStats = client.statisticsSync(), serverStats = server.statisticsSync()
        #expect(clientStats.connectionsInitiated == 1)
        #expect(serverStats.connectionsAccepted == 1)
        #expect(serverStats.tlsHandshakeFailures == 0)
        #expect(serverStats.bytesReceived > requests.reduce(0) { $0 + $1.count })
    }

    @Test("verification against the CA file: the right name passes, a wrong one fails the send")
    func verification() throws {
        let loop = try makeLoop()
        defer { loop.shutdown() }
        let certificate = try TestCertificate.shared.get()
        let (server, serverInbox, address) = try server(loop)
        defer { withExtendedLifetime(server) {} }
        let (client, _) = makeTransport(loop, tls: TLSConfiguration(verifyPeer: true, caFilePath: certificate.certificate))
        let events = TransportEvents(client)
        let peer = SIPPeerAddress(host: "127.0.0.1", port: address.port)

        client.sendSoon(sipMessage("verified"), to: SIPDestination(kind: .tls, address: peer, serverName: "localhost"))
        #expect(serverInbox.first()?.bytes == sipMessage("verified"))

        client.sendSoon(sipMessage("wrong-name"), to: SIPDestination(kind: .tls, address: peer, serverName: "sip.example.com"))
        let failure = try #require(events.failures.first())
        guard case .tlsHandshakeFailed(let failedPeer, let reason) = failure.error else {
            Issue.record("unexpected \(failure.error)")
            return
        }
        #expect(failedPeer == peer)
        #expect(reason.contains("hostname mismatch"), "\(reason)")
        #expect(failure.destination.serverName == "sip.example.com")
        let stats = client.statisticsSync()
        #expect(stats.tlsHandshakeFailures == 1)
        #expect(stats.connectionsOpen == 1)
        #expect(serverInbox.all.count == 1)
    }

    @Test("a self-signed server fails verification against the system CAs; a missing CA file is named")
    func untrusted() throws {
        let loop = try makeLoop()
        defer { loop.shutdown() }
        let certificate = try TestCertificate.shared.get()
        let (server, _, address) = try server(loop)
        defer { withExtendedLifetime(server) {} }
        let destination = SIPDestination(
            kind: .tls, address: SIPPeerAddress(host: "127.0.0.1", port: address.port), serverName: "localhost")

        let (system, _) = makeTransport(loop, tls: TLSConfiguration(verifyPeer: true))
        let systemEvents = TransportEvents(system)
        system.sendSoon(sipMessage("x"), to: destination)
        let failure = try #require(systemEvents.failures.first())
        #expect(failure.error.description.contains(
            "certificate verification failed for localhost: self-signed certificate (trusting the system's CAs)"), "\(failure.error)")

        let missing = certificate.directory + "/no-such-ca.pem"
        let (noCA, _) = makeTransport(loop, tls: TLSConfiguration(verifyPeer: true, caFilePath: missing))
        let noCAEvents = TransportEvents(noCA)
        noCA.sendSoon(sipMessage("y"), to: destination)
        let named = try #require(noCAEvents.failures.first())
        #expect(named.error.description.contains(missing), "\(named.error)")
    }

    @Test("messages queued during the handshake that outgrow the queue as TLS records all fail, none silently")
    func handshakeBacklogOverflow() throws {
        let loop = try makeLoop()
        defer { loop.shutdown() }
        let (server, _, address) = try server(loop)
        defer { withExtendedLifetime(server) {} }
        // 4,000 messages of 10 bytes fit the 40,000-byte limit as plaintext; as TLS records (22 bytes more each)
        // they outgrow the limit and its 64 KiB headroom while the handshake's end encrypts them.
        let (client, _) = makeTransport(
            loop, tls: TLSConfiguration(verifyPeer: false), limits: TransportLimits(maxQueuedBytesPerConnection: 40_000))
        let events = TransportEvents(client)
        let destination = SIPDestination(kind: .tls, address: SIPPeerAddress(host: "127.0.0.1", port: address.port))
        let message = Data("0123456789".utf8)
        loop.execute {
            for _ in 0..<4000 { client.send(message, to: destination) }
        }
        let failures = try #require(events.failures.wait(for: 4000))
        #expect(failures.allSatisfy { $0.error == .queueOverflow(destination.address) })
        #expect(events.failures.wait(for: 4001, within: .milliseconds(200)) == nil)
        #expect(client.statisticsSync().queueOverflows == 1)
    }

    @Test("a client that never finishes its handshake is closed after the setup timeout")
    func silentClient() throws {
        let loop = try makeLoop()
        defer { loop.shutdown() }
        let certificate = try TestCertificate.shared.get()
        let (server, _) = makeTransport(
            loop, tls: certificate.server, limits: TransportLimits(connectionSetupTimeout: .milliseconds(150)))
        let address = try server.listenSync(ListenAddress(parsing: "tls://127.0.0.1:0"))
        let start = ContinuousClock.now
        let client = try RawSocket(connectingTo: address)
        #expect(client.waitForClose())
        #expect(ContinuousClock.now - start >= .milliseconds(150))
        let stats = server.statisticsSync()
        #expect(stats.tlsHandshakeFailures == 1)
        #expect(stats.idleConnectionsClosed == 0)
    }

    @Test("a plain-TCP client talking garbage to the TLS port is closed and counted")
    func plainGarbage() throws {
        let loop = try makeLoop()
        defer { loop.shutdown() }
        let (server, serverInbox, address) = try server(loop)
        let client = try RawSocket(connectingTo: address)
        client.write(sipMessage("plain"))
        #expect(client.waitForClose())
        let stats = server.statisticsSync()
        #expect(stats.tlsHandshakeFailures == 1)
        #expect(stats.connectionsClosed == 1)
        #expect(serverInbox.all.isEmpty)
    }

    @Test("bad TLS settings are clear errors that name the file")
    func badSettings() throws {
        let loop = try makeLoop()
        defer { loop.shutdown() }
        let certificate = try TestCertificate.shared.get()
        let address = try ListenAddress(parsing: "tls://127.0.0.1:0")

        let (plain, _) = makeTransport(loop)
        #expect(throws: TransportError.tlsNotConfigured) { try plain.listenSync(address) }

        let missing = certificate.directory + "/missing.pem"
        let (noFile, _) = makeTransport(loop, tls: TLSConfiguration(certificatePath: missing, privateKeyPath: certificate.key))
        do {
            _ = try noFile.listenSync(address)
            Issue.record("listened with a missing certificate")
        } catch {
            #expect(error.description.contains(missing))
            #expect(error.description.contains("No such file or directory"), "\(error)")
        }

        let (notPEM, _) = makeTransport(loop, tls: TLSConfiguration(certificatePath: "/etc/hostname", privateKeyPath: certificate.key))
        do {
            _ = try notPEM.listenSync(address)
            Issue.record("listened with a certificate that is not PEM")
        } catch {
            if case .tlsFile(let path, _) = error {
                #expect(path == "/etc/hostname")
            } else {
                Issue.record("unexpected \(error)")
            }
        }

        let (mismatch, _) = makeTransport(
            loop, tls: TLSConfiguration(certificatePath: certificate.certificate, privateKeyPath: certificate.otherKey))
        #expect(throws: TransportError.tlsKeyMismatch(certificatePath: certificate.certificate, privateKeyPath: certificate.otherKey)) {
            try mismatch.listenSync(address)
        }

        let (keyless, _) = makeTransport(loop, tls: TLSConfiguration(certificatePath: certificate.certificate))
        #expect(throws: TransportError.tlsCertificateMissing) { try keyless.listenSync(address) }
    }
}
