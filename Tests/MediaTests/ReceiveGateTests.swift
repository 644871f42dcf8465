import Foundation
import Glibc
@testable import Media
import ParleyTestSupport
import Testing

/// Who may send a call's media (issue 48): a stranger on another loopback address sending valid RTP of the call's
/// codec, before and during the peer's stream, and a peer that must show it receives us before we send.
@Suite("Media: the receive gate", .serialized)
struct ReceiveGateTests {
    /// Alice (1,000 Hz, 127.0.0.1) calls Bob, who records; Mallory (2,500 Hz, 127.0.0.2) streams at Bob's port from
    /// `malloryAfter` seconds for `mallorySeconds`. Bob's recording, his last figures and the call's length.
    static func attack(
        aliceAfter: Double, malloryAfter: Double, mallorySeconds: Double, seconds: Double
    ) throws -> (heard: Recording, figures: RTPStatistics?, seconds: Double) {
        let folder = try MediaSessionTests.directory()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let pool = try MediaSessionTests.pool()
        let (a, b) = (try #require(pool.reserve()), try #require(pool.reserve()))
        let base = 20_000 + Int.random(in: 0..<200) * 200
        let strangers = try RTPPortPool(host: "127.0.0.2", range: base...(base + 199))
        let m = try #require(strangers.reserve())
        let bob = MediaSession(
            reservation: b, parameters: MediaStreamParameters(codec: .pcmu, remoteHost: "127.0.0.1", remotePort: a.port),
            source: .silence, sink: .files(directory: folder), recordingName: "bob")
        let started = Date()
        var alice: MediaSession?, mallory: MediaSession?
        for moment in [aliceAfter, malloryAfter, malloryAfter + mallorySeconds].enumerated().sorted(by: { $0.element < $1.element }) {
            let wait = moment.element - Date().timeIntervalSince(started)
            if wait > 0 { Thread.sleep(forTimeInterval: wait) }
            switch moment.offset {
            case 0:
                alice = MediaSession(
                    reservation: a, parameters: MediaStreamParameters(codec: .pcmu, remoteHost: "127.0.0.1", remotePort: b.port),
                    source: .tone(hertz: 1_000), sink: .null, recordingName: "alice")
            case 1:
                mallory = MediaSession(
                    reservation: m, parameters: MediaStreamParameters(codec: .pcmu, remoteHost: "127.0.0.1", remotePort: b.port),
                    source: .tone(hertz: 2_500), sink: .null, recordingName: "mallory")
            default:
                mallory?.finish()
            }
        }
        let rest = seconds - Date().timeIntervalSince(started)
        if rest > 0 { Thread.sleep(forTimeInterval: rest) }
        let figures = bob.latestStatistics
        alice?.finish()
        bob.finish()
        return (try Recording(wavAt: try #require(bob.recordingPath)), figures, Date().timeIntervalSince(started))
    }

    @Test("a stranger's stream from another address during the call is never heard, and every packet of it is counted as dropped")
    func strangerDuringCall() throws {
        let (heard, figures, seconds) = try Self.attack(aliceAfter: 0, malloryAfter: 0.5, mallorySeconds: 1.6, seconds: 2.6)
        #expect(heard.seconds(at: 2_500) == 0, "bob heard the stranger: \(heard.dominantFrequencies())")
        #expect(heard.seconds(at: 1_000) >= 0.8 * (seconds - 0.3), "bob heard alice: \(heard.dominantFrequencies())")
        // About 75 of Mallory's packets had come by the reading at 2 s (50 a second from 0.5 s).
        let dropped = try #require(figures).packetsDropped
        #expect(dropped >= 60, "dropped \(dropped)")
    }

    @Test("a stranger who streams before the peer is latched onto, and the peer's first packet takes the call back for good")
    func strangerRacesPeer() throws {
        let (heard, _, seconds) = try Self.attack(aliceAfter: 1, malloryAfter: 0, mallorySeconds: 2.5, seconds: 3)
        let stranger = heard.seconds(at: 2_500)
        #expect(stranger <= 1.5, "the stranger is heard only until alice's first packet: \(stranger) s, \(heard.dominantFrequencies())")
        #expect(heard.seconds(at: 1_000) >= 0.8 * (seconds - 1.3), "then alice: \(heard.dominantFrequencies())")
    }

    @Test("awaiting the peer: nothing is sent, RTP from its address included, until the engine says it acknowledged our answer")
    func awaitsPeer() throws {
        let pool = try MediaSessionTests.pool()
        let b = try #require(pool.reserve())
        // The peer: a socket on 127.0.0.1 that listens, and sends one RTP packet (which anyone could spoof).
        let peer = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        defer { close(peer) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(peer, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        try #require(bound == 0)
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(peer, $0, &length) }
        }
        let peerPort = Int(UInt16(bigEndian: address.sin_port))
        var timeout = timeval(tv_sec: 1, tv_usec: 500_000)
        setsockopt(peer, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var parameters = MediaStreamParameters(codec: .pcmu, remoteHost: "127.0.0.1", remotePort: peerPort)
        parameters.awaitsPeer = true
        let bob = MediaSession(reservation: b, parameters: parameters, source: .tone(hertz: 440), sink: .null, recordingName: "bob")
        defer { bob.finish() }
        SRTPMediaTests.send([0x80, 0x00, 0, 1, 0, 0, 0, 160, 0, 0, 0, 9] + [UInt8](repeating: 0xFF, count: 160), from: peer, to: b.port)
        var buffer = [UInt8](repeating: 0, count: 1_500)
        #expect(recv(peer, &buffer, buffer.count, 0) < 0, "nothing before the ACK, even after RTP from the peer's address")
        parameters.awaitsPeer = false
        bob.update(parameters)
        #expect(recv(peer, &buffer, buffer.count, 0) > 12, "the stream flows once the answer is acknowledged")
    }

    @Test("media goes only to numeric unicast addresses: no host name, multicast, broadcast, or loopback unless ours is")
    func destinations() {
        #expect(MediaDestination.refusal(of: "192.0.2.7", local: "198.51.100.1") == nil)
        #expect(MediaDestination.refusal(of: "2001:db8::7", local: "2001:db8::1") == nil)
        #expect(MediaDestination.refusal(of: "127.0.0.1", local: "127.0.0.1") == nil)
        #expect(MediaDestination.refusal(of: "0.0.0.0", local: "192.0.2.1") == nil, "an old-style hold is not a destination")
        for refused in ["victim.example.com", "224.0.0.1", "239.255.255.250", "255.255.255.255", "ff02::1", "::ffff:224.0.0.9"] {
            #expect(MediaDestination.refusal(of: refused, local: "192.0.2.1") != nil, "\(refused)")
        }
        #expect(MediaDestination.refusal(of: "127.0.0.1", local: "192.0.2.1")?.contains("loopback") == true)
        #expect(MediaDestination.refusal(of: "::1", local: "2001:db8::1")?.contains("loopback") == true)
    }
}
