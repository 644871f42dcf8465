import Foundation
import Glibc
import Media
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

    /// Alice (1,000 Hz) and Bob (440 Hz) for 2.5 s, Bob receiving with `bobHears` (the key Alice sends with, or not).
    /// Bob's recording is nil when nothing was decoded at all (wavenc writes nothing without audio).
    static func call(
        aliceSends: SRTPStreamKey, bobHears: SRTPStreamKey, meanwhile: (Int) -> Void = { _ in Thread.sleep(forTimeInterval: 2.5) }
    ) throws -> (alice: Recording, bob: Recording?, seconds: Double) {
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
        meanwhile(b.port)
        let seconds = Date().timeIntervalSince(started)
        alice.finish()
        bob.finish()
        let bobsFile = try #require(bob.recordingPath)
        let bobsBytes = (try? FileManager.default.attributesOfItem(atPath: bobsFile)[.size] as? Int) ?? 0
        return (try Recording(wavAt: try #require(alice.recordingPath)), bobsBytes == 0 ? nil : try Recording(wavAt: bobsFile), seconds)
    }

    @Test("with the right keys each side hears the other's tone; the description never shows a key")
    func rightKeys() throws {
        let (alice, heard, seconds) = try Self.call(aliceSends: Self.key(1), bobHears: Self.key(1))
        let bob = try #require(heard, "bob recorded nothing")
        #expect(bob.seconds(at: 1_000) >= 0.8 * seconds, "bob heard \(bob.dominantFrequencies())")
        #expect(alice.seconds(at: 440) >= 0.8 * seconds, "alice heard \(alice.dominantFrequencies())")
        let shown = "\(MediaEncryption.sdes(send: Self.key(1), receive: Self.key(2)))"
        #expect(!shown.contains("[") && shown.contains("aes-128-icm"), "\(shown)")
    }

    @Test("a receiver with the wrong key hears nothing of the tone (the packets fail authentication)")
    func wrongKey() throws {
        let (alice, bob, seconds) = try Self.call(aliceSends: Self.key(1), bobHears: Self.key(77))
        #expect((bob?.seconds(at: 1_000) ?? 0) == 0, "bob heard \(bob?.dominantFrequencies() ?? [])")
        #expect(alice.seconds(at: 440) >= 0.8 * seconds, "the other way is keyed right: \(alice.dominantFrequencies())")
    }

    @Test("forged SRTP (RTP headers, bad authentication tags), replays of a stream's header and garbage at the port are dropped: the call goes on")
    func forgedPackets() throws {
        let (_, heard, seconds) = try Self.call(aliceSends: Self.key(1), bobHears: Self.key(1)) { port in
            let junk = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
            defer { close(junk) }
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            for round in 0..<50 {
                for target in [port, port + 1] {
                    address.sin_port = UInt16(target).bigEndian
                    // A PCMU RTP header with a payload and a tag that cannot authenticate; the same sequence again
                    // (a replay); a short datagram; an SRTCP-looking one.
                    let sequence = UInt8(round & 0xFF)
                    let payloads: [[UInt8]] = [
                        [0x80, 0x00, 0, sequence, 0, 0, 0, 1, 0xDE, 0xAD, 0xBE, 0xEF] + [UInt8](repeating: 0x55, count: 170),
                        [0x80, 0x00, 0, 0, 0, 0, 0, 1, 0xDE, 0xAD, 0xBE, 0xEF] + [UInt8](repeating: 0xAA, count: 170),
                        [0x80], [0x81, 0xC8, 0, 6] + [UInt8](repeating: 0x11, count: 40),
                    ]
                    for payload in payloads {
                        _ = withUnsafePointer(to: &address) { pointer in
                            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                                sendto(junk, payload, payload.count, 0, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                            }
                        }
                    }
                }
                Thread.sleep(forTimeInterval: 0.05)
            }
        }
        let bob = try #require(heard, "bob recorded nothing")
        #expect(bob.seconds(at: 1_000) >= 0.8 * seconds, "bob heard \(bob.dominantFrequencies())")
    }
}
