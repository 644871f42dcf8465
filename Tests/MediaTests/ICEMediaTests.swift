import Foundation
import ICE
import Media
import ParleyTestSupport
import Testing

/// Two ICE agents on loopback (host candidates only), as two calls' ends would use them: credentials and
/// candidates exchanged as the SDP would carry them, checks, a selected pair, then audio through it.
@Suite("ICE: two agents on loopback select a host pair, and a call's audio goes through it", .timeLimit(.minutes(1)))
struct ICEMediaTests {
    /// Polls `condition` every 20 ms until it holds or `timeout` passes; whether it held.
    static func eventually(_ timeout: Duration = .seconds(10), _ condition: () -> Bool) async throws -> Bool {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if condition() { return true }
            try await Task.sleep(for: .milliseconds(20))
        }
        return condition()
    }

    /// An offerer (controlling) and an answerer, gathered on 127.0.0.1 and told each other's candidates.
    static func connectedPair(firstPorts: (Int, Int)? = nil) async throws -> (ICEAgent, ICEAgent) {
        let notifications = try ICENotifications()
        let offerer = try ICEAgent(
            controlling: true, localAddresses: ["127.0.0.1"], firstPort: firstPorts?.0, notifications: notifications)
        let answerer = try ICEAgent(
            controlling: false, localAddresses: ["127.0.0.1"], firstPort: firstPorts?.1, notifications: notifications)
        try offerer.gather()
        try answerer.gather()
        #expect(try await eventually { offerer.report.gatheringDone && answerer.report.gatheringDone })
        for (agent, peer) in [(offerer, answerer), (answerer, offerer)] {
            let credentials = try #require(peer.localCredentials)
            #expect(credentials.ufrag.count >= 4 && credentials.password.count >= 22, "RFC 8839's lengths")
            let taken = try agent.setRemote(ufrag: credentials.ufrag, password: credentials.password, candidates: peer.localCandidates)
            #expect(taken == 2, "one host candidate per component: \(peer.localCandidates)")
        }
        return (offerer, answerer)
    }

    @Test("host candidates on 127.0.0.1, component N's on the first port + N - 1 (the call's reserved pair); the checks select host↔host pairs and reach ready")
    func hostPair() async throws {
        let base = 30_000 + Int.random(in: 0..<100) * 20
        let (offerer, answerer) = try await Self.connectedPair(firstPorts: (base, base + 2))
        for candidate in offerer.localCandidates {
            let fields = candidate.split(separator: " ")
            #expect(fields.count >= 8 && fields[4] == "127.0.0.1" && fields[7] == "host", "\(candidate)")
            #expect(Int(fields[5]) == base + (Int(fields[1]) ?? 0) - 1, "\(candidate) binds the pair's port")
        }
        let defaultCandidate = try #require(offerer.defaultCandidate())
        #expect(defaultCandidate.host == "127.0.0.1" && defaultCandidate.port == base)
        #expect(try await Self.eventually {
            [offerer, answerer].allSatisfy { $0.report.pairs.allSatisfy { $0 != nil } && $0.report.state == .ready }
        }, "offerer \(offerer.report), answerer \(answerer.report)")
        let pair = try #require(offerer.report.pairs[0])
        #expect(pair.localType == .host && pair.remoteType == .host && pair.remote.hasPrefix("127.0.0.1:"), "\(pair)")
    }

    @Test("a 1,000 Hz tone one way and 440 Hz the other cross the selected pairs (nicesrc and nicesink on the agents), each heard at its frequency")
    func audioThroughICE() async throws {
        let (offerer, answerer) = try await Self.connectedPair()
        #expect(try await Self.eventually { offerer.report.state == .ready && answerer.report.state == .ready })
        let folder = try MediaSessionTests.directory()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let pool = try MediaSessionTests.pool()
        let (a, b) = (try #require(pool.reserve()), try #require(pool.reserve()))
        let failures = Failures()
        func session(_ reservation: RTPPortPool.Reservation, _ agent: ICEAgent, _ hertz: Double, _ name: String) -> MediaSession {
            var parameters = MediaStreamParameters(codec: .pcmu, remoteHost: "127.0.0.1", remotePort: 9)
            parameters.ice = ICEBinding(agent)
            return MediaSession(
                reservation: reservation, parameters: parameters, source: .tone(hertz: hertz),
                sink: .files(directory: folder), recordingName: name, report: failures.add)
        }
        let alice = session(a, offerer, 1_000, "alice"), bob = session(b, answerer, 440, "bob")
        let started = ContinuousClock.now
        try await Task.sleep(for: .milliseconds(2_500))
        let duration = Double((ContinuousClock.now - started).components.seconds) + 0.5
        #expect(try await Self.eventually { (bob.latestStatistics?.packetsReceived ?? 0) > 50 }, "\(String(describing: bob.latestStatistics))")
        alice.finish()
        bob.finish()
        #expect(failures.all.isEmpty, "\(failures.all)")
        let heardByBob = try Recording(wavAt: try #require(bob.recordingPath))
        let heardByAlice = try Recording(wavAt: try #require(alice.recordingPath))
        #expect(heardByBob.seconds(at: 1_000) >= 0.7 * duration, "bob heard \(heardByBob.dominantFrequencies())")
        #expect(heardByAlice.seconds(at: 440) >= 0.7 * duration, "alice heard \(heardByAlice.dominantFrequencies())")
        // The agents stay answerable after the pipelines stopped (their own receiver is attached again).
        try await Task.sleep(for: .milliseconds(200))
        #expect(offerer.report.state != .failed && answerer.report.state != .failed)
        pool.release(a.port)
        pool.release(b.port)
    }
}
