import Foundation
import Glibc
@testable import Media
import ParleyTestSupport
import Testing

/// The security layer with SDES keys: two sessions on loopback, each sending with its own key and receiving with
/// the other's.
@Suite("Media: SRTP keyed by SDES between two sessions")
struct SRTPMediaTests {
    /// An AES_CM_128_HMAC_SHA1_80 key whose bytes all start from `seed`.
    static func key(_ seed: UInt8, auth: String = "hmac-sha1-80") -> SRTPStreamKey {
        SRTPStreamKey(cipher: "aes-128-icm", auth: auth, rtcpAuth: "hmac-sha1-80", material: (0..<30).map { seed &+ UInt8($0) })
    }

    /// Alice (1,000 Hz) and Bob (440 Hz) for 2.5 s (or while `meanwhile` runs, given Bob's port and Alice's RTP
    /// socket), Bob receiving with `bobHears` (the key Alice sends with, or not). Bob's recording is nil when nothing
    /// was decoded at all (wavenc writes nothing without audio); his last figures come with it.
    static func call(
        aliceSends: SRTPStreamKey, bobHears: SRTPStreamKey,
        meanwhile: (_ bobsPort: Int, _ alicesSocket: Int32) -> Void = { _, _ in Thread.sleep(forTimeInterval: 2.5) }
    ) throws -> (alice: Recording, bob: Recording?, seconds: Double, bobsFigures: RTPStatistics?) {
        let folder = try MediaSessionTests.directory()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let pool = try MediaSessionTests.pool()
        let (a, b) = (try #require(pool.reserve()), try #require(pool.reserve()))
        var toBob = MediaStreamParameters(codec: .pcmu, remoteHost: "127.0.0.1", remotePort: b.port)
        toBob.encryption = .sdes(send: aliceSends, receive: key(9))
        var toAlice = MediaStreamParameters(codec: .pcmu, remoteHost: "127.0.0.1", remotePort: a.port)
        toAlice.encryption = .sdes(send: key(9), receive: bobHears)
        let alice = MediaSession(
            reservation: a, parameters: toBob, source: .tone(hertz: 1_000), sink: .files(directory: folder), recordingName: "alice")
        let bob = MediaSession(
            reservation: b, parameters: toAlice, source: .tone(hertz: 440), sink: .files(directory: folder), recordingName: "bob")
        let started = Date()
        meanwhile(b.port, a.rtp)
        let seconds = Date().timeIntervalSince(started)
        let bobsFigures = bob.latestStatistics
        alice.finish()
        bob.finish()
        let bobsFile = try #require(bob.recordingPath)
        let bobsBytes = (try? FileManager.default.attributesOfItem(atPath: bobsFile)[.size] as? Int) ?? 0
        return (
            try Recording(wavAt: try #require(alice.recordingPath)), bobsBytes == 0 ? nil : try Recording(wavAt: bobsFile), seconds,
            bobsFigures
        )
    }

    @Test("with the right keys each side hears the other's tone; the description never shows a key")
    func rightKeys() throws {
        let (alice, heard, seconds, _) = try Self.call(aliceSends: Self.key(1), bobHears: Self.key(1))
        let bob = try #require(heard, "bob recorded nothing")
        #expect(bob.seconds(at: 1_000) >= 0.8 * seconds, "bob heard \(bob.dominantFrequencies())")
        #expect(alice.seconds(at: 440) >= 0.8 * seconds, "alice heard \(alice.dominantFrequencies())")
        let shown = "\(MediaEncryption.sdes(send: Self.key(1), receive: Self.key(2)))"
        #expect(!shown.contains("[") && shown.contains("aes-128-icm"), "\(shown)")
    }

    @Test("a receiver with the wrong key hears nothing of the tone (the packets fail authentication)")
    func wrongKey() throws {
        let (alice, bob, seconds, _) = try Self.call(aliceSends: Self.key(1), bobHears: Self.key(77))
        #expect((bob?.seconds(at: 1_000) ?? 0) == 0, "bob heard \(bob?.dominantFrequencies() ?? [])")
        #expect(alice.seconds(at: 440) >= 0.8 * seconds, "the other way is keyed right: \(alice.dominantFrequencies())")
    }

    @Test("forged SRTP from the peer's own address (bad authentication tags, a replayed header) and a stranger's garbage are dropped and counted: the call goes on")
    func forgedPackets() throws {
        let rounds = 40
        let (_, heard, seconds, figures) = try Self.call(aliceSends: Self.key(1), bobHears: Self.key(1)) { port, alicesSocket in
            let stranger = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
            defer { close(stranger) }
            for round in 0..<rounds {
                // From Alice's own socket (the source Bob accepts): a PCMU RTP header with a payload and a tag that
                // cannot authenticate, and the same header again (a replay). From a stranger: a short datagram and
                // an SRTCP-looking one.
                let sequence = UInt8(round & 0xFF)
                Self.send([0x80, 0x00, 0, sequence, 0, 0, 0, 1, 0xDE, 0xAD, 0xBE, 0xEF] + [UInt8](repeating: 0x55, count: 170), from: alicesSocket, to: port)
                Self.send([0x80, 0x00, 0, sequence, 0, 0, 0, 1, 0xDE, 0xAD, 0xBE, 0xEF] + [UInt8](repeating: 0xAA, count: 170), from: alicesSocket, to: port)
                Self.send([0x80], from: stranger, to: port)
                Self.send([0x81, 0xC8, 0, 6] + [UInt8](repeating: 0x11, count: 40), from: stranger, to: port + 1)
                Thread.sleep(forTimeInterval: 0.05)
            }
            // The figures are read every 2 s: wait for a reading after the last forgery.
            Thread.sleep(forTimeInterval: 2.1)
        }
        let bob = try #require(heard, "bob recorded nothing")
        #expect(bob.seconds(at: 1_000) >= 0.8 * seconds, "bob heard \(bob.dominantFrequencies())")
        // 80 forgeries fail SRTP's check and 80 datagrams come from a stranger: all are counted, none reaches rtpbin.
        let dropped = try #require(figures).packetsDropped
        #expect((4 * rounds - 4)...(4 * rounds) ~= dropped, "dropped \(dropped) of \(4 * rounds)")
    }

    /// Sends `bytes` from `socket` to 127.0.0.1:`port`.
    static func send(_ bytes: [UInt8], from socket: Int32, to port: Int) {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = UInt16(port).bigEndian
        _ = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                sendto(socket, bytes, bytes.count, 0, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
    }
}
