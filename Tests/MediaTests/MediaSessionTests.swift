import Foundation
import Glibc
import Media
import Synchronization
import ParleyTestSupport
import Testing

@Suite("Media: audio between two sessions on loopback")
struct MediaSessionTests {
    /// A fresh temporary directory.
    static func directory() throws -> String {
        let path = NSTemporaryDirectory() + "parley-media-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    /// A pool over 200 ports at a place picked at run time (ports another program holds are skipped).
    static func pool() throws -> RTPPortPool {
        let base = 20_000 + Int.random(in: 0..<200) * 200
        return try RTPPortPool(host: "127.0.0.1", range: base...(base + 199))
    }

    @Test("a 1,000 Hz tone one way and 440 Hz the other arrive, each for most of the call, at its frequency; the RTP figures count them")
    func toneBothWays() throws {
        let folder = try Self.directory()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let pool = try Self.pool()
        let (a, b) = (try #require(pool.reserve()), try #require(pool.reserve()))
        let failures = Failures()
        let alice = MediaSession(
            reservation: a, parameters: MediaStreamParameters(codec: .pcmu, remoteHost: "127.0.0.1", remotePort: b.port),
            source: .tone(hertz: 1_000), sink: .files(directory: folder), recordingName: "alice", report: failures.add)
        let reported = Mutex<[RTPStatistics]>([])
        let bob = MediaSession(
            reservation: b, parameters: MediaStreamParameters(codec: .pcmu, remoteHost: "127.0.0.1", remotePort: a.port),
            source: .tone(hertz: 440), sink: .files(directory: folder), recordingName: "bob", report: failures.add,
            statisticsReported: { figures in reported.withLock { $0.append(figures) } })
        let started = Date()
        Thread.sleep(forTimeInterval: 2.5)
        let duration = Date().timeIntervalSince(started)
        // One reading at two seconds: about 100 packets each way, none lost, one packet per 20 ms (little jitter).
        let figures = try #require(bob.latestStatistics)
        #expect(reported.withLock { $0 } == [figures])
        #expect((80...125).contains(figures.packetsReceived) && (80...125).contains(figures.packetsSent), "\(figures)")
        #expect(figures.packetsLost == 0 && figures.jitterMilliseconds < 10 && figures.codec == .pcmu, "\(figures)")
        #expect(figures.packetsExpected == figures.packetsReceived, "loopback: every packet expected came \(figures)")
        alice.finish()
        bob.finish()
        #expect(failures.all.isEmpty)
        let heardByBob = try Recording(wavAt: try #require(bob.recordingPath))
        let heardByAlice = try Recording(wavAt: try #require(alice.recordingPath))
        #expect(heardByBob.seconds(at: 1_000) >= 0.8 * duration, "bob heard \(heardByBob.dominantFrequencies())")
        #expect(heardByAlice.seconds(at: 440) >= 0.8 * duration, "alice heard \(heardByAlice.dominantFrequencies())")
        #expect(heardByBob.seconds(at: 440) == 0, "bob's own tone is not in what he received")
        pool.release(a.port)
        pool.release(b.port)
        #expect(pool.count == 0)
    }

    @Test("PCMA works the same; garbage datagrams at the RTP port neither crash nor stall the pipeline")
    func pcmaUnderGarbage() throws {
        let folder = try Self.directory()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let pool = try Self.pool()
        let (a, b) = (try #require(pool.reserve()), try #require(pool.reserve()))
        let sender = MediaSession(
            reservation: a, parameters: MediaStreamParameters(codec: .pcma, remoteHost: "127.0.0.1", remotePort: b.port),
            source: .tone(hertz: 700), sink: .null, recordingName: "sender")
        let receiver = MediaSession(
            reservation: b, parameters: MediaStreamParameters(codec: .pcma, remoteHost: "127.0.0.1", remotePort: a.port),
            source: .silence, sink: .files(directory: folder), recordingName: "receiver")
        let started = Date()
        let junk = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        defer { close(junk) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        for round in 0..<40 {
            for port in [b.port, b.port + 1] {
                address.sin_port = UInt16(port).bigEndian
                // Short, RTP-looking, version-0 and oversized datagrams.
                let payloads: [[UInt8]] = [[0x80], [0x80, 0x08, 0, UInt8(round)] + [UInt8](repeating: 0xFF, count: 8),
                    [0x00] + [UInt8](repeating: 0x41, count: 40), [UInt8](repeating: 0x80, count: 1_400)]
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
        let duration = Date().timeIntervalSince(started)
        sender.finish()
        receiver.finish()
        let heard = try Recording(wavAt: try #require(receiver.recordingPath))
        #expect(heard.seconds(at: 700) >= 0.8 * duration, "heard \(heard.dominantFrequencies())")
    }

    @Test("opus (48 kHz, a dynamic payload type) carries a tone the same way: heard at its frequency")
    func opusBothWays() throws {
        try #require(MediaSupport.hasOpus, "the opus elements come with gstreamer1.0-plugins-base and -good")
        let folder = try Self.directory()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let pool = try Self.pool()
        let (a, b) = (try #require(pool.reserve()), try #require(pool.reserve()))
        let failures = Failures()
        // Each side receives at the payload type it named (107 and 111), and sends at the other's.
        let alice = MediaSession(
            reservation: a,
            parameters: MediaStreamParameters(
                codec: .opus, remoteHost: "127.0.0.1", remotePort: b.port, payloadType: 111, receivedPayloadType: 107),
            source: .tone(hertz: 1_000), sink: .files(directory: folder), recordingName: "alice", report: failures.add)
        let bob = MediaSession(
            reservation: b,
            parameters: MediaStreamParameters(
                codec: .opus, remoteHost: "127.0.0.1", remotePort: a.port, payloadType: 107, receivedPayloadType: 111),
            source: .tone(hertz: 440), sink: .files(directory: folder), recordingName: "bob", report: failures.add)
        let started = Date()
        Thread.sleep(forTimeInterval: 2.5)
        let duration = Date().timeIntervalSince(started)
        let figures = bob.latestStatistics
        alice.finish()
        bob.finish()
        #expect(failures.all.isEmpty)
        let heardByBob = try Recording(wavAt: try #require(bob.recordingPath))
        let heardByAlice = try Recording(wavAt: try #require(alice.recordingPath))
        #expect(heardByBob.sampleRate == 48_000)
        #expect(heardByBob.seconds(at: 1_000) >= 0.8 * duration, "bob heard \(heardByBob.dominantFrequencies())")
        #expect(heardByAlice.seconds(at: 440) >= 0.8 * duration, "alice heard \(heardByAlice.dominantFrequencies())")
        #expect(figures?.codec == .opus && (figures?.jitterMilliseconds ?? 100) < 10, "\(String(describing: figures))")
    }

    @Test("a source file that does not exist is reported, and nothing crashes or hangs")
    func missingSourceFile() throws {
        let pool = try Self.pool()
        let (a, b) = (try #require(pool.reserve()), try #require(pool.reserve()))
        let failures = Failures()
        let session = MediaSession(
            reservation: a, parameters: MediaStreamParameters(codec: .pcmu, remoteHost: "127.0.0.1", remotePort: b.port),
            source: .file(path: "/nonexistent/parley.wav"), sink: .null, recordingName: "x", report: failures.add)
        Thread.sleep(forTimeInterval: 0.5)
        session.finish()
        #expect(failures.all.contains { $0.contains("parley.wav") || $0.contains("not found") || $0.contains("No such") },
            "\(failures.all)")
    }

    @Test("RFC 4733: keypad tones sent in the stream arrive as the same tones, in order; other characters are skipped")
    func telephoneEvents() throws {
        let pool = try Self.pool()
        let (a, b) = (try #require(pool.reserve()), try #require(pool.reserve()))
        let heard = Failures()
        let alice = MediaSession(
            reservation: a,
            parameters: MediaStreamParameters(codec: .pcmu, remoteHost: "127.0.0.1", remotePort: b.port, telephoneEvent: 101),
            source: .tone(hertz: 1_000), sink: .null, recordingName: "a")
        let bob = MediaSession(
            reservation: b,
            parameters: MediaStreamParameters(codec: .pcmu, remoteHost: "127.0.0.1", remotePort: a.port, telephoneEvent: 101),
            source: .silence, sink: .null, recordingName: "b", tonesReceived: { heard.add(String($0)) })
        Thread.sleep(forTimeInterval: 0.5)
        alice.sendTones("12#x*D")
        let deadline = Date().addingTimeInterval(5)
        while heard.all.count < 5 && Date() < deadline { Thread.sleep(forTimeInterval: 0.05) }
        alice.finish()
        bob.finish()
        #expect(heard.all.joined() == "12#*D", "x is not a keypad tone")
    }

    @Test("not sending (a hold, old-style too) stops the stream without a new pipeline; sending again restarts it")
    func directionFlips() throws {
        let folder = try Self.directory()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let pool = try Self.pool()
        let (a, b) = (try #require(pool.reserve()), try #require(pool.reserve()))
        var toBob = MediaStreamParameters(codec: .pcmu, remoteHost: "127.0.0.1", remotePort: b.port)
        let alice = MediaSession(reservation: a, parameters: toBob, source: .tone(hertz: 1_000), sink: .null, recordingName: "a")
        let bob = MediaSession(
            reservation: b, parameters: MediaStreamParameters(codec: .pcmu, remoteHost: "127.0.0.1", remotePort: a.port),
            source: .silence, sink: .files(directory: folder), recordingName: "b")
        Thread.sleep(forTimeInterval: 1)
        // Bob holds old-style (c=0.0.0.0): alice keeps his address for RTCP, sends no RTP, builds no new pipeline.
        toBob.sends = false
        toBob.remoteHost = "0.0.0.0"
        alice.update(toBob)
        Thread.sleep(forTimeInterval: 1.5)
        toBob.sends = true
        toBob.remoteHost = "127.0.0.1"
        alice.update(toBob)
        Thread.sleep(forTimeInterval: 1)
        alice.finish()
        bob.finish()
        let heard = try Recording(wavAt: try #require(bob.recordingPath))
        let toneSeconds = heard.seconds(at: 1_000)
        // About 2 s of tone (1 s before the hold, 1 s after); the jitter buffer may stretch the gap, never fill it.
        #expect(toneSeconds >= 1.4 && toneSeconds <= 2.6, "heard \(heard.dominantFrequencies())")
    }
}

extension MediaSessionTests {
    /// A UDP socket on 127.0.0.1 at `port`, waiting up to `seconds` for one datagram: 0.0.0.0 as a destination is
    /// this host, so what went there from a socket on 127.0.0.1 arrives here. The byte count, or -1.
    static func datagram(at port: Int, within seconds: Int) throws -> Int {
        let watch = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        defer { close(watch) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = UInt16(port).bigEndian
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(watch, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        try #require(bound == 0, "the watching socket's port \(port) is taken")
        var timeout = timeval(tv_sec: seconds, tv_usec: 0)
        setsockopt(watch, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var buffer = [UInt8](repeating: 0, count: 1_500)
        return recv(watch, &buffer, buffer.count, 0)
    }

    /// Bob on 127.0.0.2 (so that nothing meant for him lands on 127.0.0.1), sending a tone to `alice`; his pool
    /// holds his sockets open.
    static func bob(sendingTo alice: RTPPortPool.Reservation) throws -> (MediaSession, RTPPortPool.Reservation, RTPPortPool) {
        let base = 20_000 + Int.random(in: 0..<200) * 200
        let pool = try RTPPortPool(host: "127.0.0.2", range: base...(base + 199))
        let reservation = try #require(pool.reserve())
        let session = MediaSession(
            reservation: reservation,
            parameters: MediaStreamParameters(codec: .pcmu, remoteHost: "127.0.0.1", remotePort: alice.port),
            source: .tone(hertz: 440), sink: .null, recordingName: "bob")
        return (session, reservation, pool)
    }

    @Test("a peer's old-style hold (c=0.0.0.0) keeps its address: our RTCP never goes to 0.0.0.0, this host")
    func oldStyleHoldKeepsAddress() throws {
        let pool = try Self.pool()
        let alice = try #require(pool.reserve())
        let (bob, bobPorts, bobPool) = try Self.bob(sendingTo: alice)
        defer { withExtendedLifetime((pool, bobPool)) {} }
        var toBob = MediaStreamParameters(codec: .pcmu, remoteHost: "127.0.0.2", remotePort: bobPorts.port)
        let session = MediaSession(reservation: alice, parameters: toBob, source: .silence, sink: .null, recordingName: "alice")
        Thread.sleep(forTimeInterval: 1)
        toBob.remoteHost = "0.0.0.0"
        toBob.sends = false
        session.update(toBob)
        // Bob goes on sending; alice's receiver reports about him go out every 5 s or so (RFC 3550).
        let stray = try Self.datagram(at: bobPorts.port + 1, within: 7)
        session.finish()
        bob.finish()
        #expect(stray < 0, "\(stray) bytes went to 0.0.0.0:\(bobPorts.port + 1)")
    }

    @Test("a stream that begins on an old-style hold (c=0.0.0.0) sends nothing, RTCP included, while it receives")
    func beginsOnOldStyleHold() throws {
        let failures = Failures()
        let pool = try Self.pool()
        let alice = try #require(pool.reserve())
        let (bob, bobPorts, bobPool) = try Self.bob(sendingTo: alice)
        defer { withExtendedLifetime((pool, bobPool)) {} }
        let session = MediaSession(
            reservation: alice,
            parameters: MediaStreamParameters(codec: .pcmu, remoteHost: "0.0.0.0", remotePort: bobPorts.port, sends: false),
            source: .tone(hertz: 1_000), sink: .null, recordingName: "alice", report: failures.add)
        let stray = try Self.datagram(at: bobPorts.port + 1, within: 7)
        let figures = session.latestStatistics
        session.finish()
        bob.finish()
        #expect(stray < 0, "\(stray) bytes went to 0.0.0.0:\(bobPorts.port + 1)")
        #expect((figures?.packetsReceived ?? 0) > 100, "alice took bob's stream: \(String(describing: figures))")
        #expect(failures.all.isEmpty)
    }
}

/// Failures a session reported, from its queue.
final class Failures: Sendable {
    private let lines = Mutex<[String]>([])
    func add(_ line: String) { lines.withLock { $0.append(line) } }
    var all: [String] { lines.withLock { $0 } }
}

@Suite("Media: the pieces")
struct MediaPieceTests {
    @Test("the spectrum finds a synthesised tone within 2 %, and not one that is not there")
    func spectrum() {
        for hertz in [440.0, 1_000, 2_750] {
            let samples = (0..<16_000).map { 0.5 * sin(2 * Double.pi * hertz * Double($0) / 8_000) }
            let recording = Recording(sampleRate: 8_000, samples: samples)
            #expect(recording.seconds(at: hertz) >= 1.5)
            #expect(recording.seconds(at: hertz * 1.1) == 0)
        }
        #expect(Recording(sampleRate: 8_000, samples: [Double](repeating: 0, count: 8_000)).seconds(at: 440) == 0)
    }

    @Test("the port pool hands out even pairs, skips a pair another socket holds, runs out; a released pair waits out a quiet minute")
    func portPool() throws {
        let base = 30_000 + Int.random(in: 0..<100) * 100
        let holder = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        defer { close(holder) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = UInt16(base + 3).bigEndian
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(holder, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        try #require(bound == 0)
        let clock = Mutex(ContinuousClock.now)
        let pool = try RTPPortPool(host: "127.0.0.1", range: base...(base + 5), now: { clock.withLock { $0 } })
        let first = try #require(pool.reserve())
        let second = try #require(pool.reserve())
        #expect(Set([first.port, second.port]) == [base, base + 4], "base + 2 is skipped: its RTCP port is held")
        #expect(pool.reserve() == nil)
        pool.release(first.port)
        #expect(pool.reserve() == nil && pool.quarantinedCount == 1, "a released pair is quarantined")
        clock.withLock { $0 += .seconds(59) }
        #expect(pool.reserve() == nil, "not before a minute")
        // Quiet for a minute: free again.
        clock.withLock { $0 += .seconds(2) }
        #expect(pool.reserve()?.port == first.port && pool.quarantinedCount == 0, "quiet for a minute: free again")
        // A previous peer that goes on sending keeps its pair out for another quiet minute, unless nothing else is
        // free and the pair has served its minute (a range sprayed with packets must not starve new calls).
        pool.release(second.port)
        SRTPMediaTests.send([0x80, 0x00, 0, 1, 0, 0, 0, 1, 0, 0, 0, 7], from: holder, to: second.port)
        clock.withLock { $0 += .seconds(30) }
        #expect(pool.reserve() == nil, "within its minute")
        clock.withLock { $0 += .seconds(31) }
        #expect(pool.reserve()?.port == second.port, "nothing else free: the sprayed pair, once it served its minute")
        #expect(throws: MediaError.self) { try RTPPortPool(host: "localhost", range: base...(base + 5)) }
        #expect(throws: MediaError.self) { try RTPPortPool(host: "127.0.0.1", range: 80...81) }
    }

    @Test("a lent pair's sockets close so another socket binds its ports (an ICE agent's), it stays reserved; reclaimed it is bound again; released while still held it waits out its quarantine unbound, then is free")
    func lentPair() throws {
        let base = 30_000 + Int.random(in: 0..<100) * 100
        let clock = Mutex(ContinuousClock.now)
        let pool = try RTPPortPool(host: "127.0.0.1", range: base...(base + 1), now: { clock.withLock { $0 } })
        let pair = try #require(pool.reserve())
        #expect(!pair.isLent)
        func bindPort(_ port: Int) -> Int32 {
            let fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            address.sin_port = UInt16(port).bigEndian
            let bound = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            if bound != 0 { close(fd); return -1 }
            return fd
        }
        #expect(bindPort(pair.port) < 0, "reserved: the pool holds the port")
        let lent = try #require(pool.lend(pair.port))
        #expect(lent.isLent && pool.count == 1)
        let borrower = bindPort(pair.port)
        #expect(borrower >= 0, "lent: the borrower binds it")
        #expect(pool.reclaim(pair.port) == nil, "not while the borrower holds it")
        close(borrower)
        let reclaimed = try #require(pool.reclaim(pair.port))
        #expect(!reclaimed.isLent && bindPort(pair.port) < 0, "bound again")
        // Lent again and released while the borrower still holds it: quarantined unbound, given out after it.
        _ = pool.lend(pair.port)
        let second = bindPort(pair.port)
        pool.release(pair.port)
        #expect(pool.quarantinedCount == 1 && pool.reserve() == nil)
        close(second)
        clock.withLock { $0 += .seconds(61) }
        let again = try #require(pool.reserve())
        #expect(again.port == pair.port && !again.isLent, "free again after its quarantine, bound")
    }

    @Test("ports are taken at random from the range: the next call's port cannot be guessed from this one's")
    func randomPorts() throws {
        let base = 30_000 + Int.random(in: 0..<100) * 300
        let pool = try RTPPortPool(host: "127.0.0.1", range: base...(base + 299))
        let ports = (0..<20).compactMap { _ in pool.reserve()?.port }
        #expect(ports.count == 20 && ports.allSatisfy { $0 % 2 == 0 && (base...(base + 298)).contains($0) })
        // In order, the 20 would be the range's first 20 pairs, each 2 after the last; at random (150 pairs), a
        // step of exactly 2 comes about once in 150 draws.
        let steps = zip(ports, ports.dropFirst()).filter { $1 - $0 == 2 }.count
        #expect(steps <= 3, "\(ports)")
    }

    @Test("sources and sinks read from the command line, with clear errors")
    func parsing() throws {
        #expect(try AudioSource(parsing: "tone:440") == .tone(hertz: 440))
        #expect(try AudioSource(parsing: "file:/tmp/a.wav") == .file(path: "/tmp/a.wav"))
        #expect(try AudioSource(parsing: "silence") == .silence)
        #expect(try AudioSink(parsing: "file:/tmp") == .files(directory: "/tmp"))
        #expect(try AudioSink(parsing: "null") == .null)
        for bad in ["tone:", "tone:5", "tone:abc", "file:", "mic", ""] {
            #expect(throws: MediaError.self) { try AudioSource(parsing: bad) }
        }
        for bad in ["file:", "speaker", ""] {
            #expect(throws: MediaError.self) { try AudioSink(parsing: bad) }
        }
    }
}
