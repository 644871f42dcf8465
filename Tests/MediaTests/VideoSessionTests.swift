import Foundation
import Glibc
import ParleyTestSupport
import Testing

@testable import Media

/// A video session against a peer the test plays itself, on a reserved port pair: what it sends is read as VP8
/// (keyframes counted from the payload descriptor), and what the peer sends is chosen to hurt: a storm of keyframe
/// requests, malformed payloads, and then the session's own valid stream reflected back to it.
@Suite("Media: a video session against a hostile peer", .serialized, .timeLimit(.minutes(2)))
struct VideoSessionTests {
    /// Whether an RTP packet starts a VP8 keyframe (RFC 7741 §4.2-4.3: the descriptor's S bit and partition 0, then the
    /// payload header's P bit clear).
    static func startsKeyframe(_ packet: [UInt8]) -> Bool {
        guard packet.count > 14, packet[0] >> 6 == 2 else { return false }
        var index = 12 + 4 * Int(packet[0] & 0x0F)
        guard index < packet.count else { return false }
        let first = packet[index]
        guard first & 0x10 != 0, first & 0x07 == 0 else { return false }
        index += 1
        if first & 0x80 != 0, index < packet.count {
            let extensions = packet[index]
            index += 1
            if extensions & 0x80 != 0, index < packet.count { index += packet[index] & 0x80 != 0 ? 2 : 1 }
            if extensions & 0x40 != 0 { index += 1 }
            if extensions & 0x30 != 0 { index += 1 }
        }
        return index < packet.count && packet[index] & 0x01 == 0
    }

    /// An RTCP compound packet from `sender`: an empty receiver report and a PLI (RFC 4585 §6.3.1) for `media`.
    static func pictureLossIndication(sender: UInt32, media: UInt32) -> [UInt8] {
        return [0x80, 201, 0, 1] + Self.word(sender) + [0x81, 206, 0, 2] + Self.word(sender) + Self.word(media)
    }

    /// A VP8 session sending a moving ball at 320x240, `kilobits` kbit/s, to a peer the test plays on a pair of its
    /// own: the session, its pair, the peer's, and the pool that holds them.
    static func session(kilobits: Int) throws -> (VideoSession, RTPPortPool.Reservation, RTPPortPool.Reservation, RTPPortPool) {
        let pool = try MediaSessionTests.pool()
        let (ours, peer) = (try #require(pool.reserve()), try #require(pool.reserve()))
        let parameters = VideoStreamParameters(
            codec: .vp8, payloadType: 96, receivedPayloadType: 96, remoteHost: "127.0.0.1", remotePort: peer.port)
        let session = VideoSession(
            reservation: ours, parameters: parameters, source: .test(pattern: "ball"), sink: .null,
            format: VideoFormat(width: 320, height: 240, frameRate: 30, bitrate: kilobits), recordingName: "video")
        return (session, ours, peer, pool)
    }

    /// A 32-bit word, network order.
    static func word(_ value: UInt32) -> [UInt8] { [UInt8(value >> 24), UInt8(value >> 16 & 0xFF), UInt8(value >> 8 & 0xFF), UInt8(value & 0xFF)] }

    static func send(_ bytes: [UInt8], from fd: Int32, to port: Int) {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        _ = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                sendto(fd, bytes, bytes.count, 0, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
    }

    /// The datagrams waiting at `fd` (non-blocking reads).
    static func drain(_ fd: Int32) -> [[UInt8]] {
        var packets: [[UInt8]] = []
        var buffer = [UInt8](repeating: 0, count: 2_048)
        while true {
            let count = recv(fd, &buffer, buffer.count, Int32(MSG_DONTWAIT))
            guard count > 0 else { return packets }
            packets.append(Array(buffer[0..<count]))
        }
    }

    @Test("a keyframe request storm is rate-limited; malformed VP8 is survived; the valid stream after it is decoded")
    func hostilePeer() throws {
        let (session, ours, peer, pool) = try Self.session(kilobits: 300)
        defer { session.finish() }
        _ = pool

        // Two seconds undisturbed: the regular keyframes (one every 60 frames) and our SSRC.
        Thread.sleep(forTimeInterval: 2)
        let calm = Self.drain(peer.rtp)
        try #require(calm.count > 30, "\(calm.count) packets in 2 s")
        let ssrc = calm[0][8..<12].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }

        // Three seconds of 100 PLIs a second: at most two keyframes a second go out, not one a frame.
        let peerSSRC: UInt32 = 0x5EED_0001
        for _ in 0..<300 {
            Self.send(Self.pictureLossIndication(sender: peerSSRC, media: ssrc), from: peer.rtcp, to: ours.port + 1)
            Thread.sleep(forTimeInterval: 0.01)
        }
        let stormed = Self.drain(peer.rtp)
        let keyframes = stormed.filter(Self.startsKeyframe).count
        #expect(keyframes >= 3 && keyframes <= 9, "\(keyframes) keyframes in 3 s of 300 PLIs (\(stormed.count) packets)")
        let asked = try #require(session.latestStatistics).keyframeRequestsReceived
        #expect(asked >= 100, "the session counted \(asked) keyframe requests")

        // Malformed VP8 from the peer's own port: empty payloads, truncated descriptors, random bytes.
        var generator = SystemRandomNumberGenerator()
        for sequence in 0..<400 {
            let length = [0, 1, 3, 17, 200, 1_200][sequence % 6]
            let payload = (0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) }
            let header: [UInt8] = [0x80, 96 | (sequence % 7 == 0 ? 0x80 : 0), UInt8(sequence >> 8), UInt8(sequence & 0xFF)]
                + [0, 0, UInt8(sequence >> 8), UInt8(sequence & 0xFF)] + [0xBA, 0xD0, 0xBA, 0xD0]
            Self.send(header + payload, from: peer.rtp, to: ours.port)
        }
        Thread.sleep(forTimeInterval: 0.5)
        // Then the session's own valid stream, reflected back from the peer's port under an SSRC of the peer's (its
        // own SSRC coming back would be a loop to the RTP session): it decodes.
        let before = session.latestStatistics?.framesReceived ?? 0
        let deadline = Date().addingTimeInterval(3)
        while Date() < deadline {
            for packet in Self.drain(peer.rtp) where packet.count > 12 && packet[1] & 0x7F == 96 {
                Self.send(Array(packet[0..<8]) + [0x5E, 0xED, 0x00, 0x02] + Array(packet[12...]), from: peer.rtp, to: ours.port)
            }
            Thread.sleep(forTimeInterval: 0.005)
        }
        let after = try #require(session.latestStatistics)
        #expect(after.framesReceived - before >= 30, "frames decoded after the garbage: \(after.framesReceived - before)")
        #expect(after.receivedWidth == 320 && after.receivedHeight == 240, "\(after)")
        #expect(after.framesSent > 150, "the session kept sending: \(after.framesSent)")
    }

    /// An RTCP compound packet from `sender`: an empty receiver report and a REMB (a PSFB of FMT 15, "REMB") asking for
    /// at most `bitsPerSecond` on `media`.
    static func receiverEstimate(sender: UInt32, media: UInt32, bitsPerSecond: UInt64) -> [UInt8] {
        var exponent: UInt64 = 0
        while bitsPerSecond >> exponent >= 1 << 18 { exponent += 1 }
        let mantissa = bitsPerSecond >> exponent
        let estimate: [UInt8] = [1, UInt8(exponent << 2 | mantissa >> 16), UInt8(mantissa >> 8 & 0xFF), UInt8(mantissa & 0xFF)]
        return [0x80, 201, 0, 1] + Self.word(sender) + [0x8F, 206, 0, 5] + Self.word(sender) + Self.word(0) + Array("REMB".utf8) + estimate + Self.word(media)
    }

    /// The same with a TMMBR (RFC 5104 §4.2.1: an RTPFB of FMT 3) for `media`, 40 bytes of overhead.
    static func bitrateRequest(sender: UInt32, media: UInt32, bitsPerSecond: UInt64) -> [UInt8] {
        var exponent: UInt64 = 0
        while bitsPerSecond >> exponent >= 1 << 17 { exponent += 1 }
        let request = UInt32(exponent << 26 | (bitsPerSecond >> exponent) << 9 | 40)
        return [0x80, 201, 0, 1] + Self.word(sender) + [0x83, 205, 0, 4] + Self.word(sender) + Self.word(0) + Self.word(media) + Self.word(request)
    }

    @Test("the peer's REMB lowers what the encoder sends, a higher one brings it back to the picture's own (never above); TMMBR too, the lower of the two kept; one about another stream is ignored")
    func followsThePeersBitrate() throws {
        #expect(VideoSession.encoderBitrate(asked: nil, cap: 300) == 300)
        #expect(VideoSession.encoderBitrate(asked: 100, cap: 300) == 95 && VideoSession.encoderBitrate(asked: 1, cap: 300) == 30)
        #expect(VideoSession.encoderBitrate(asked: 10_000, cap: 300) == 300)
        // A moving ball: the encoder spends about what it is given at these rates (snow or SMPTE's noise cost more
        // than any target here: libvpx keeps its quality floor).
        let (session, ours, peer, pool) = try Self.session(kilobits: 120)
        defer { session.finish() }
        _ = pool
        Thread.sleep(forTimeInterval: 1)
        let ssrc = try #require(Self.drain(peer.rtp).first.map { $0[8..<12].reduce(UInt32(0)) { $0 << 8 | UInt32($1) } })
        let peerSSRC: UInt32 = 0x5EED_0003
        /// The encoder's bitrate (kbit/s) and the kbit/s that arrived over the last three of five seconds of sending
        /// `packet` five times a second.
        func sent(_ packet: [UInt8]?) -> (encoder: Int, arrived: Int) {
            var bytes = 0
            for tick in 0..<25 {
                if let packet { Self.send(packet, from: peer.rtcp, to: ours.port + 1) }
                Thread.sleep(forTimeInterval: 0.2)
                let arrived = Self.drain(peer.rtp).reduce(0) { $0 + $1.count }
                if tick >= 10 { bytes += arrived }
            }
            return (session.encoderKilobits, bytes * 8 / 3 / 1_000)
        }
        let calm = sent(nil)
        // CBR (as WebRTC runs libvpx): what leaves is what the encoder is given, plus RTP's headers.
        #expect(calm.encoder == 120 && (90...150).contains(calm.arrived), "before any REMB: \(calm)")
        let lowered = sent(Self.receiverEstimate(sender: peerSSRC, media: ssrc, bitsPerSecond: 50_000))
        #expect(lowered.encoder == 47 && lowered.arrived <= 65, "after REMB 50 kbit/s: \(lowered), before \(calm)")
        // A TMMBR about another stream is not ours to follow.
        Self.send(Self.bitrateRequest(sender: peerSSRC, media: ssrc ^ 0xFFFF, bitsPerSecond: 20_000), from: peer.rtcp, to: ours.port + 1)
        let raised = sent(Self.receiverEstimate(sender: peerSSRC, media: ssrc, bitsPerSecond: 10_000_000))
        #expect(raised.encoder == 120 && (90...150).contains(raised.arrived), "after REMB 10 Mbit/s: \(raised), before \(calm)")
        let requested = sent(Self.bitrateRequest(sender: peerSSRC, media: ssrc, bitsPerSecond: 50_000))
        #expect(requested.encoder == 47 && requested.arrived <= 65, "after TMMBR 50 kbit/s: \(requested), before \(calm)")
    }
}
