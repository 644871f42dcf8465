import Foundation
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
    static func call(aliceSends: SRTPStreamKey, bobHears: SRTPStreamKey) throws -> (alice: Recording, bob: Recording?, seconds: Double) {
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
        Thread.sleep(forTimeInterval: 2.5)
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
}
