import Foundation
import Media
import ParleyIO
import ParleyTestSupport
import Synchronization
import Testing

/// The security layer with DTLS-SRTP: two sessions on loopback, one the DTLS client and one the server, each with
/// its own certificate, each checking the other's against the fingerprint it was given.
@Suite("Media: SRTP keyed by DTLS between two sessions", .serialized, .timeLimit(.minutes(3)))
struct DTLSMediaTests {
    /// What one side was told by its session.
    final class Outcomes: Sendable {
        private let seen = Mutex<[MediaSecurityOutcome]>([])
        func add(_ outcome: MediaSecurityOutcome) { seen.withLock { $0.append(outcome) } }
        var all: [MediaSecurityOutcome] { seen.withLock { $0 } }
    }

    /// Alice (the client, 1,000 Hz) and Bob (the server, 440 Hz) for `seconds` after both were told the outcome of
    /// their check; Alice expects `aliceExpects` as Bob's fingerprint (his, or not). Recordings are nil when nothing
    /// was decoded at all.
    static func call(
        seconds: Double = 2.5, aliceExpects: ((DTLSCertificate) -> [CertificateFingerprint])? = nil
    ) throws -> (alice: Recording?, bob: Recording?, told: (alice: [MediaSecurityOutcome], bob: [MediaSecurityOutcome]), seconds: Double) {
        let folder = try MediaSessionTests.directory()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let pool = try MediaSessionTests.pool()
        let (a, b) = (try #require(pool.reserve()), try #require(pool.reserve()))
        let (alicesCertificate, bobsCertificate) = (try DTLSCertificate.generate(), try DTLSCertificate.generate())
        var toBob = MediaStreamParameters(codec: .pcmu, remoteHost: "127.0.0.1", remotePort: b.port)
        toBob.encryption = .dtls(DTLSSetup(
            isClient: true, certificate: alicesCertificate,
            peerFingerprints: aliceExpects?(bobsCertificate) ?? [bobsCertificate.fingerprint]))
        var toAlice = MediaStreamParameters(codec: .pcmu, remoteHost: "127.0.0.1", remotePort: a.port)
        toAlice.encryption = .dtls(DTLSSetup(isClient: false, certificate: bobsCertificate, peerFingerprints: [alicesCertificate.fingerprint]))
        let (alicesOutcomes, bobsOutcomes) = (Outcomes(), Outcomes())
        let alice = MediaSession(
            reservation: a, parameters: toBob, source: .tone(hertz: 1_000), sink: .files(directory: folder), recordingName: "alice",
            securityReported: alicesOutcomes.add)
        let bob = MediaSession(
            reservation: b, parameters: toAlice, source: .tone(hertz: 440), sink: .files(directory: folder), recordingName: "bob",
            securityReported: bobsOutcomes.add)
        // The first DTLS pipelines of a process wait for GStreamer's once-only set-up (a default certificate, about
        // 0.35 s, longer on a busy machine): the call's time counts from both checks' outcomes.
        let created = Date()
        while alicesOutcomes.all.isEmpty || bobsOutcomes.all.isEmpty, Date().timeIntervalSince(created) < 5 {
            Thread.sleep(forTimeInterval: 0.01)
        }
        let started = Date()
        Thread.sleep(forTimeInterval: seconds)
        let elapsed = Date().timeIntervalSince(started)
        alice.finish()
        bob.finish()
        func recording(_ session: MediaSession) throws -> Recording? {
            let path = try #require(session.recordingPath)
            let bytes = (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0
            return bytes <= 44 ? nil : try Recording(wavAt: path)
        }
        return (try recording(alice), try recording(bob), (alicesOutcomes.all, bobsOutcomes.all), elapsed)
    }

    @Test("with the right fingerprints both handshakes complete, both sides are told so, and each hears the other's tone")
    func rightFingerprints() throws {
        let (alice, bob, told, seconds) = try Self.call()
        #expect(told.alice == [.secured] && told.bob == [.secured], "\(told)")
        let heardByBob = try #require(bob, "bob recorded nothing"), heardByAlice = try #require(alice, "alice recorded nothing")
        #expect(heardByBob.seconds(at: 1_000) >= 0.8 * seconds, "bob heard \(heardByBob.dominantFrequencies())")
        #expect(heardByAlice.seconds(at: 440) >= 0.8 * seconds, "alice heard \(heardByAlice.dominantFrequencies())")
    }

    @Test("a peer whose certificate is not the one its fingerprint names: a security failure, and no audio either way")
    func wrongFingerprint() throws {
        let other = try DTLSCertificate.generate()
        let (alice, bob, told, _) = try Self.call { _ in [other.fingerprint] }
        #expect(told.alice.count == 1 && told.alice.first.map { "\($0)".contains("does not match") } == true, "\(told.alice)")
        #expect((alice?.seconds(at: 440) ?? 0) == 0, "alice heard \(alice?.dominantFrequencies() ?? [])")
        #expect((bob?.seconds(at: 1_000) ?? 0) == 0, "bob heard \(bob?.dominantFrequencies() ?? [])")
    }

    @Test("a fingerprint of a stronger hash is the one checked (SHA-512 over SHA-256), and must match too")
    func strongestHash() throws {
        let (_, _, told, _) = try Self.call(seconds: 1) { bobs in
            let sha512 = DTLSCertificate.digest(ofCertificatePEM: bobs.pem, algorithm: .sha512) ?? []
            return [bobs.fingerprint, CertificateFingerprint(algorithm: .sha512, digest: sha512.map { $0 ^ 1 })]
        }
        #expect(told.alice.first.map { "\($0)".contains("does not match") } == true, "\(told.alice)")
    }
}

extension DTLSMediaTests {
    @Test("a peer that never completes the handshake: a security failure after the deadline, and no audio")
    func deafPeer() throws {
        let folder = try MediaSessionTests.directory()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let pool = try MediaSessionTests.pool()
        let (a, b) = (try #require(pool.reserve()), try #require(pool.reserve()))
        let certificate = try DTLSCertificate.generate()
        var toNobody = MediaStreamParameters(codec: .pcmu, remoteHost: "127.0.0.1", remotePort: b.port)
        toNobody.encryption = .dtls(DTLSSetup(isClient: true, certificate: certificate, peerFingerprints: [certificate.fingerprint]))
        let outcomes = Outcomes()
        let started = Date()
        let alice = MediaSession(
            reservation: a, parameters: toNobody, source: .tone(hertz: 1_000), sink: .null, recordingName: "alice",
            securityReported: outcomes.add)
        while outcomes.all.isEmpty, Date().timeIntervalSince(started) < 15 { Thread.sleep(forTimeInterval: 0.1) }
        let waited = Date().timeIntervalSince(started)
        alice.finish()
        #expect(outcomes.all.count == 1 && outcomes.all.first.map { "\($0)".contains("did not complete within 10 s") } == true,
            "\(outcomes.all)")
        #expect(waited >= 9.9 && waited < 11.5, "told after \(waited) s")
    }
}

extension DTLSMediaTests {
    /// Alice (1,000 Hz) calls Bob (440 Hz), whose answer is not acknowledged yet (`awaitsPeer`); `bobIsClient` picks
    /// Bob's DTLS role. Waits 2.5 s, then acknowledges Bob's answer and waits until both were told their outcome (at
    /// most `within` s): the outcomes before the ACK, after it, and the seconds the second took.
    static func unacknowledgedAnswer(
        bobIsClient: Bool, sink: AudioSink, within: Double, then: ((MediaSession, MediaSession) throws -> Void)? = nil
    ) throws -> (before: [MediaSecurityOutcome], after: (alice: [MediaSecurityOutcome], bob: [MediaSecurityOutcome]), took: Double) {
        let pool = try MediaSessionTests.pool()
        let (a, b) = (try #require(pool.reserve()), try #require(pool.reserve()))
        let (alicesCertificate, bobsCertificate) = (try DTLSCertificate.generate(), try DTLSCertificate.generate())
        var toBob = MediaStreamParameters(codec: .pcmu, remoteHost: "127.0.0.1", remotePort: b.port)
        toBob.encryption = .dtls(DTLSSetup(isClient: !bobIsClient, certificate: alicesCertificate, peerFingerprints: [bobsCertificate.fingerprint]))
        var toAlice = MediaStreamParameters(codec: .pcmu, remoteHost: "127.0.0.1", remotePort: a.port)
        toAlice.encryption = .dtls(DTLSSetup(isClient: bobIsClient, certificate: bobsCertificate, peerFingerprints: [alicesCertificate.fingerprint]))
        toAlice.awaitsPeer = true
        let (alicesOutcomes, bobsOutcomes) = (Outcomes(), Outcomes())
        let alice = MediaSession(
            reservation: a, parameters: toBob, source: .tone(hertz: 1_000), sink: sink, recordingName: "alice",
            securityReported: alicesOutcomes.add)
        let bob = MediaSession(
            reservation: b, parameters: toAlice, source: .tone(hertz: 440), sink: sink, recordingName: "bob",
            securityReported: bobsOutcomes.add)
        defer {
            alice.finish()
            bob.finish()
        }
        Thread.sleep(forTimeInterval: 2.5)
        let before = alicesOutcomes.all + bobsOutcomes.all
        toAlice.awaitsPeer = false
        let acknowledged = Date()
        bob.update(toAlice)
        while alicesOutcomes.all.isEmpty || bobsOutcomes.all.isEmpty, Date().timeIntervalSince(acknowledged) < within {
            Thread.sleep(forTimeInterval: 0.01)
        }
        let took = Date().timeIntervalSince(acknowledged)
        try then?(alice, bob)
        return (before, (alicesOutcomes.all, bobsOutcomes.all), took)
    }

    /// Issue 48: an answer not yet acknowledged reads nothing of the handshake, so a spoofed INVITE's ClientHellos
    /// draw no flight of ours; the ACK lets the handshake run at once (the held ClientHello waited in the socket).
    @Test("the server holds the handshake until its answer is acknowledged, then completes it at once")
    func handshakeWaitsForTheACK() throws {
        let folder = try MediaSessionTests.directory()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        var heard: Recording?
        let (before, after, took) = try Self.unacknowledgedAnswer(bobIsClient: false, sink: .files(directory: folder), within: 5) { _, bob in
            Thread.sleep(forTimeInterval: 1.5)
            bob.finish()
            heard = try Recording(wavAt: try #require(bob.recordingPath))
        }
        #expect(before.isEmpty, "no handshake before the ACK: \(before)")
        #expect(after.alice == [.secured] && after.bob == [.secured], "\(after)")
        // The held ClientHello is read at once (not the client's next retransmission, a second or more later).
        #expect(took < 0.9, "secured \(took) s after the ACK")
        #expect((heard?.seconds(at: 1_000) ?? 0) >= 1.0, "bob heard \(heard?.dominantFrequencies() ?? [])")
    }

    /// Issue 48: when an offer made the answerer the DTLS client, its ClientHellos wait for the ACK too (a spoofed INVITE
    /// with `setup:passive` draws no flight at the address it names); the client's next retransmission (its timer
    /// doubles from 1 s) goes out once it is acknowledged.
    @Test("a client that answered sends nothing, its ClientHello included, until its answer is acknowledged")
    func clientWaitsForTheACK() throws {
        let (before, after, _) = try Self.unacknowledgedAnswer(bobIsClient: true, sink: .null, within: 8)
        #expect(before.isEmpty, "no handshake before the ACK: \(before)")
        #expect(after.alice == [.secured] && after.bob == [.secured], "\(after)")
    }
}
