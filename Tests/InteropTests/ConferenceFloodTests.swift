import ControlProtocol
import Foundation
import ParleyTestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// A conference member's RTP port flooded while merged (docs/media.md, "Who may send a call's media" and "The
/// conference bridge"): alice (1,000 Hz) merges bob (440 Hz), carol (2,500 Hz) and dave (2,000 Hz); for 3 s alice's
/// port for dave's call takes 2,000 packets/s of RTP from a stranger's socket and 1,000 packets/s of RTP spoofed
/// from dave's own address and port (a raw socket: the receive gate lets those through, to rtpbin). bob and carol
/// go on hearing alice and each other as before. (The tones are chosen so that no sum or difference of the others'
/// multiples falls on 440 or 2,500 Hz: G.711's distortion of a 1,700 Hz dave put −56 dB at carol's own tone.)
extension AudioInterop {
    @Suite("Interop: a conference member's port flooded", .serialized, .timeLimit(.minutes(2)))
    struct ConferenceFloodTests {
        static let tones = (alice: 1_000.0, bob: 440.0, carol: 2_500.0, dave: 2_000.0, spoofed: 3_000.0)

        /// The call's negotiated audio in `mediaStats` (null for a moment after the call joins), waited for.
        static func media(of call: String, at focus: GroupControl) throws -> [String: Any] {
            let deadline = ContinuousClock.now + .seconds(5)
            while true {
                if let media = try focus.result(.mediaStats(ConversationParams(conversation: call)))["media"] as? [String: Any] {
                    return media
                }
                guard ContinuousClock.now < deadline else { throw InteropError("no media for \(call) in mediaStats") }
                Thread.sleep(forTimeInterval: 0.05)
            }
        }

        @Test("3 s of 3,000 RTP packets/s at alice's port for dave's call (a stranger's and spoofed from dave's address) while merged: bob and carol hear alice and each other within 3 dB of before, alice answers and counts the stranger's packets dropped")
        func floodedMember() throws {
            var made: [(Parleyd, URL)] = []
            for (user, tone) in [("alice", Self.tones.alice), ("bob", Self.tones.bob), ("carol", Self.tones.carol), ("dave", Self.tones.dave)] {
                let answers = user == "alice" ? ["--on-new-call", "none"] : ["--auto-answer", "0"]
                made.append(try AudioInteropTests.parleyd(tone: Int(tone), ["--user", user] + answers))
            }
            defer { for (_, folder) in made { try? FileManager.default.removeItem(at: folder) } }
            let (alice, bob, carol, dave) = (made[0].0, made[1].0, made[2].0, made[3].0)
            let focus = try GroupControl(alice)
            let calls = try [bob, carol, dave].map { try focus.call("sip:member@127.0.0.1:\($0.port)") }
            try focus.waitForJoined(calls)
            let davesMedia = try Self.media(of: calls[2], at: focus)
            let (target, davesPort) = (try #require(davesMedia["localPort"] as? Int), try #require(davesMedia["remotePort"] as? Int))
            _ = try focus.result(.merge(MergeParams(conversation: calls[0], with: calls[1])))
            _ = try focus.result(.merge(MergeParams(conversation: calls[2], with: calls[0])))
            Thread.sleep(forTimeInterval: 3)
            let flood = try RTPFlood(to: UInt16(target), spoofing: UInt16(davesPort))
            let started = ContinuousClock.now
            let sent = flood.run(seconds: 3, strangerPerTick: 20, spoofedPerTick: 10, tone: Self.tones.spoofed)
            let stopped = ContinuousClock.now
            // The process answers at once after the flood, and counted the stranger's packets as dropped.
            let status = try focus.result(.status)
            Thread.sleep(forTimeInterval: 2.5)
            // The figures are read every 2 s: these include the whole flood.
            let stats = try focus.result(.mediaStats(ConversationParams(conversation: calls[2])))["stats"] as? [String: Any]
            let ended = ContinuousClock.now
            for call in calls { _ = try focus.result(.end(ConversationParams(conversation: call))) }
            for member in [bob, carol, dave] { try member.waitForEnded(1) }
            #expect(alice.process.process.isRunning, "alice is still running")
            let dropped = stats?["packetsDropped"] as? Int ?? -1
            print("conference flood: sent \(sent.stranger) stranger and \(sent.spoofed) spoofed packets in \(seconds(stopped - started)) s; dave's call dropped \(dropped); status \(status["counters"] ?? status)")
            #expect(dropped >= sent.stranger / 2, "the stranger's packets were dropped: \(dropped) of \(sent.stranger); \(String(describing: stats))")
            for (name, member, folder, own, other) in [
                ("bob", bob, made[1].1, Self.tones.bob, Self.tones.carol), ("carol", carol, made[2].1, Self.tones.carol, Self.tones.bob),
            ] {
                let heard = try AudioInteropTests.recording(in: folder, of: member)
                // Seconds into the recording, counted back from its end (the call's end).
                func at(_ instant: ContinuousClock.Instant) -> Double { heard.duration - seconds(ended - instant) }
                let stretches = [(at(started) - 2.0, at(started) - 0.2), (at(started) + 0.3, at(stopped) - 0.1), (at(stopped) + 0.5, at(ended) - 0.3)]
                let levels = stretches.map { stretch in
                    let part = heard.part(from: stretch.0, to: stretch.1)
                    return [Self.tones.alice, other, own, Self.tones.dave, Self.tones.spoofed].map { part.level(at: $0) }
                }
                print("conference flood: \(name) heard [alice, other member, own, dave, spoofed] before \(levels[0]), during \(levels[1]), after \(levels[2])")
                #expect(levels[0][0] > -15 && levels[0][1] > -15, "\(name) hears alice and the other member before: \(levels[0])")
                for (when, stretch) in [("during", levels[1]), ("after", levels[2])] {
                    #expect(abs(stretch[0] - levels[0][0]) <= 3, "\(name) hears alice \(when) the flood as before: \(stretch) vs \(levels[0])")
                    #expect(abs(stretch[1] - levels[0][1]) <= 3, "\(name) hears the other member \(when) the flood as before: \(stretch) vs \(levels[0])")
                }
                // Not during the flood: the spoofed packets reach dave's decoder beside his own (plain RTP from his
                // address is his, as far as anyone can tell), and what comes out in his place is broadband.
                for (when, stretch) in [("before", levels[0]), ("after", levels[2])] {
                    #expect(stretch[1] - stretch[2] >= 60, "\(name) does not hear itself \(when) the flood: \(stretch)")
                }
            }
        }
    }
}

/// Seconds in a duration.
private func seconds(_ duration: Duration) -> Double {
    Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
}

/// RTP (PCMU, payload type 0) sent to 127.0.0.1:`target` from a stranger's UDP socket and, through a raw socket,
/// from 127.0.0.1:`spoofing` (a peer's own address: the kernel fills in the IP header, the UDP header is ours).
final class RTPFlood {
    private let stranger: Int32
    private let raw: Int32
    private let target: UInt16
    private let spoofing: UInt16

    init(to target: UInt16, spoofing: UInt16) throws {
        (self.target, self.spoofing) = (target, spoofing)
        stranger = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        raw = socket(AF_INET, Int32(SOCK_RAW.rawValue), Int32(IPPROTO_UDP))
        guard stranger >= 0, raw >= 0 else { throw InteropError("sockets for the flood: errno \(errno)") }
    }

    deinit {
        close(stranger)
        close(raw)
    }

    /// Sends, every 10 ms for `seconds`, `strangerPerTick` packets from the stranger and `spoofedPerTick` from the
    /// spoofed address, each 20 ms of a `tone` Hz sine at −6 dB; the counts sent.
    func run(seconds: Double, strangerPerTick: Int, spoofedPerTick: Int, tone: Double) -> (stranger: Int, spoofed: Int) {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = target.bigEndian
        var rawAddress = address
        rawAddress.sin_port = 0
        var counts = (stranger: 0, spoofed: 0)
        let start = ContinuousClock.now
        let ticks = Int(seconds * 100)
        for tick in 0..<ticks {
            for index in 0..<strangerPerTick {
                let sequence = tick * strangerPerTick + index
                let packet = Self.rtp(sequence: sequence, ssrc: 0x5354_5247, payload: Self.payload(tone, sequence))
                let sent = withUnsafePointer(to: &address) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                        sendto(stranger, packet, packet.count, 0, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                    }
                }
                if sent == packet.count { counts.stranger += 1 }
            }
            for index in 0..<spoofedPerTick {
                let sequence = tick * spoofedPerTick + index
                let rtp = Self.rtp(sequence: sequence, ssrc: 0x5350_4f4f, payload: Self.payload(tone, sequence))
                let length = UInt16(8 + rtp.count)
                let datagram = [UInt8(spoofing >> 8), UInt8(spoofing & 0xFF), UInt8(target >> 8), UInt8(target & 0xFF),
                                UInt8(length >> 8), UInt8(length & 0xFF), 0, 0] + rtp  // checksum 0: none (IPv4)
                let sent = withUnsafePointer(to: &rawAddress) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                        sendto(raw, datagram, datagram.count, 0, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                    }
                }
                if sent == datagram.count { counts.spoofed += 1 }
            }
            let wait = start + .milliseconds(10 * (tick + 1)) - ContinuousClock.now
            if wait > .zero { usleep(UInt32(wait.components.attoseconds / 1_000_000_000_000)) }
        }
        return counts
    }

    /// Packet `sequence`'s 160 samples of the tone (continuous from packet to packet), μ-law.
    private static func payload(_ tone: Double, _ sequence: Int) -> [UInt8] {
        (0..<160).map { MuLaw.encode(Int16(16_384 * sin(2 * .pi * tone * Double(sequence * 160 + $0) / 8_000))) }
    }

    /// An RTP packet of payload type 0, its timestamp 160 a packet.
    private static func rtp(sequence: Int, ssrc: UInt32, payload: [UInt8]) -> [UInt8] {
        let seq = UInt16(truncatingIfNeeded: sequence), timestamp = UInt32(truncatingIfNeeded: sequence * 160)
        return [0x80, 0x00, UInt8(seq >> 8), UInt8(seq & 0xFF)]
            + withUnsafeBytes(of: timestamp.bigEndian, Array.init) + withUnsafeBytes(of: ssrc.bigEndian, Array.init) + payload
    }
}

/// G.711 μ-law, for the flood's payload.
enum MuLaw {
    static func encode(_ sample: Int16) -> UInt8 {
        let bias = 0x84, clip = 32_635
        var value = Int(sample)
        let sign = value < 0 ? 0x80 : 0
        if value < 0 { value = -value }
        value = min(value, clip) + bias
        var exponent = 7
        var mask = 0x4000
        while exponent > 0 && value & mask == 0 {
            exponent -= 1
            mask >>= 1
        }
        let mantissa = (value >> (exponent + 3)) & 0x0F
        return UInt8(~(sign | (exponent << 4) | mantissa) & 0xFF)
    }
}
