import Foundation
import Glibc
import Media
import ParleyTestSupport
import Synchronization
import Testing

/// What a hold does to a session's figures and recording, with real pipelines on loopback.
@Suite("Media: a hold in the figures and the recording")
struct MediaHoldTests {
    /// Both sides' view of a hold: neither sends nor takes audio.
    static func held(_ parameters: MediaStreamParameters, _ isHeld: Bool) -> MediaStreamParameters {
        var changed = parameters
        changed.sends = !isHeld
        changed.receives = !isHeld
        return changed
    }

    /// Alice sends a 1 kHz tone to Bob, who records what he hears into `folder` and sends silence.
    static func toneCall(recordingInto folder: String) throws
        -> (alice: MediaSession, toBob: MediaStreamParameters, bob: MediaSession, toAlice: MediaStreamParameters)
    {
        let pool = try MediaSessionTests.pool()
        let (a, b) = (try #require(pool.reserve()), try #require(pool.reserve()))
        let toBob = MediaStreamParameters(codec: .pcmu, remoteHost: "127.0.0.1", remotePort: b.port)
        let toAlice = MediaStreamParameters(codec: .pcmu, remoteHost: "127.0.0.1", remotePort: a.port)
        let alice = MediaSession(reservation: a, parameters: toBob, source: .tone(hertz: 1_000), sink: .null, recordingName: "a")
        let bob = MediaSession(
            reservation: b, parameters: toAlice, source: .silence, sink: .files(directory: folder), recordingName: "b")
        return (alice, toBob, bob, toAlice)
    }

    /// Lets the tone play 1.5 s, then both sides hold: when the call started, and how long after it the hold came.
    static func holdAfterTone(
        _ alice: MediaSession, _ toBob: MediaStreamParameters, _ bob: MediaSession, _ toAlice: MediaStreamParameters
    ) -> (started: Date, holdAt: TimeInterval) {
        let started = Date()
        Thread.sleep(forTimeInterval: 1.5)
        let holdAt = Date().timeIntervalSince(started)
        alice.update(held(toBob, true))
        bob.update(held(toAlice, true))
        return (started, holdAt)
    }

    @Test("a recording follows the clock: a hold is silence of its length and the audio after it stays in place")
    func recordingKeepsTheHold() throws {
        let folder = try MediaSessionTests.directory()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let (alice, toBob, bob, toAlice) = try Self.toneCall(recordingInto: folder)
        let (started, holdAt) = Self.holdAfterTone(alice, toBob, bob, toAlice)
        Thread.sleep(forTimeInterval: 2)
        let resumeAt = Date().timeIntervalSince(started)
        alice.update(toBob)
        bob.update(toAlice)
        Thread.sleep(forTimeInterval: 1.5)
        let figures = try #require(bob.latestStatistics)
        alice.finish()
        bob.finish()
        let elapsed = Date().timeIntervalSince(started)
        let heard = try Recording(wavAt: try #require(bob.recordingPath))
        #expect(abs(heard.duration - elapsed) <= 0.3, "\(heard.duration) s recorded in \(elapsed) s")
        // 0.3 s either side of each change for the jitter buffer and the two sessions' queues.
        let before = heard.part(from: 0.3, to: holdAt - 0.3)
        let during = heard.part(from: holdAt + 0.3, to: resumeAt - 0.3)
        let after = heard.part(from: resumeAt + 0.3, to: elapsed - 0.3)
        #expect(before.seconds(at: 1_000) >= 0.8 * before.duration, "before: \(before.dominantFrequencies())")
        #expect(during.dominantFrequencies().allSatisfy { $0 == nil }, "held: \(during.dominantFrequencies())")
        #expect(after.seconds(at: 1_000) >= 0.8 * after.duration, "after: \(after.dominantFrequencies())")
        #expect(figures.packetsLost == 0 && figures.packetsExpected >= 100, "\(figures)")
    }

    @Test("a call that ends on hold keeps the held end in its recording, silent, and the file is complete")
    func recordingEndsOnHold() throws {
        let folder = try MediaSessionTests.directory()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let (alice, toBob, bob, toAlice) = try Self.toneCall(recordingInto: folder)
        let (started, holdAt) = Self.holdAfterTone(alice, toBob, bob, toAlice)
        Thread.sleep(forTimeInterval: 1.5)
        bob.finish()
        let elapsed = Date().timeIntervalSince(started)
        alice.finish()
        let path = try #require(bob.recordingPath)
        let heard = try Recording(wavAt: path)
        #expect(abs(heard.duration - elapsed) <= 0.3, "\(heard.duration) s recorded in \(elapsed) s")
        let held = heard.part(from: holdAt + 0.3, to: elapsed)
        #expect(held.duration >= 1 && held.dominantFrequencies().allSatisfy { $0 == nil }, "\(held.dominantFrequencies())")
        #expect(heard.part(from: 0.3, to: holdAt - 0.3).seconds(at: 1_000) >= 0.5, "\(heard.dominantFrequencies())")
        // The end of stream passed the closed valve: wavenc wrote the data chunk's size.
        let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        let data = try #require((0..<bytes.count - 8).first { bytes[$0..<$0 + 4] == [0x64, 0x61, 0x74, 0x61] })
        let size = (0..<4).reduce(0) { $0 | Int(bytes[data + 4 + $1]) << (8 * $1) }
        #expect(size == heard.samples.count * 2, "the data chunk says \(size) bytes")
    }

    @Test("the loss counts only while both send: a hold's gap in the peer's sequence is not lost, duplicates not negative")
    func lossSkipsTheHold() throws {
        let pool = try MediaSessionTests.pool()
        let bobPorts = try #require(pool.reserve())
        let peer = try RawRTPPeer()
        let toPeer = MediaStreamParameters(codec: .pcmu, remoteHost: "127.0.0.1", remotePort: peer.port)
        let readings = Mutex<[RTPStatistics]>([])
        let bob = MediaSession(
            reservation: bobPorts, parameters: toPeer, source: .silence, sink: .null, recordingName: "b",
            statisticsReported: { figures in readings.withLock { $0.append(figures) } })
        Thread.sleep(forTimeInterval: 0.3)
        // 50 packets, one of them twice: 50 expected, 51 received, none lost (not −1).
        for sequence in UInt16(1_000)..<1_050 {
            peer.send(sequence: sequence, to: bobPorts.port)
            if sequence == 1_010 { peer.send(sequence: sequence, to: bobPorts.port) }
        }
        bob.update(Self.held(toPeer, true))
        Thread.sleep(forTimeInterval: 0.2)
        // On hold: 10 packets arrive (music on hold) and count for nothing; then the peer's numbering jumps by 90.
        for sequence in UInt16(1_050)..<1_060 { peer.send(sequence: sequence, to: bobPorts.port) }
        Thread.sleep(forTimeInterval: 0.2)  // the last of them has reached the session before it stops holding
        bob.update(toPeer)
        Thread.sleep(forTimeInterval: 0.2)
        // After the hold: 50 expected, 5 of them never sent.
        for sequence in UInt16(1_150)..<1_200 where !(1_160..<1_165).contains(sequence) {
            peer.send(sequence: sequence, to: bobPorts.port)
        }
        // The next reading (every 2 s) has them all.
        let deadline = Date().addingTimeInterval(5)
        var last: RTPStatistics?
        while Date() < deadline {
            last = readings.withLock { $0.last }
            if let last, last.packetsExpected >= 100 { break }
            Thread.sleep(forTimeInterval: 0.1)
        }
        bob.finish()
        let figures = try #require(last)
        #expect(figures.packetsExpected == 100 && figures.packetsLost == 5, "\(figures)")
        #expect(figures.packetsReceived >= 100, "rtpbin still counts every packet that came: \(figures)")
    }
}

/// A peer that sends hand-made RTP (PCMU silence, 20 ms apart) from its own socket on 127.0.0.1, numbered as the
/// test says: a sender whose numbering runs on through a hold, as some do.
final class RawRTPPeer {
    let port: Int
    private let socket: Int32
    private var timestamp: UInt32 = 0

    init() throws {
        let descriptor = Glibc.socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        var address = Self.address(port: 0)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let named = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &length) }
        }
        guard bound == 0, named == 0 else {
            close(descriptor)
            throw PeerError()
        }
        socket = descriptor
        port = Int(UInt16(bigEndian: address.sin_port))
    }

    deinit { close(socket) }

    struct PeerError: Error {}

    static func address(port: Int) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = UInt16(port).bigEndian
        return address
    }

    /// Sends one packet (PCMU, SSRC 0x5EED) and waits a packet's time.
    func send(sequence: UInt16, to port: Int) {
        timestamp &+= 160
        let header: [UInt8] = [
            0x80, 0x00, UInt8(sequence >> 8), UInt8(sequence & 0xFF),
            UInt8(timestamp >> 24), UInt8(timestamp >> 16 & 0xFF), UInt8(timestamp >> 8 & 0xFF), UInt8(timestamp & 0xFF),
            0x00, 0x00, 0x5E, 0xED,
        ]
        let packet = header + [UInt8](repeating: 0xFF, count: 160)
        var address = Self.address(port: port)
        _ = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                sendto(socket, packet, packet.count, 0, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        Thread.sleep(forTimeInterval: 0.02)
    }
}
