import ConversationKit
import Foundation
import ParleyEngine
import SIPMessages
import Testing

/// A media handler that hands out ports from 50,000 up and writes down what the engine tells it.
final class RecordingMedia: CallMediaHandler {
    var next = 50_000
    var reserved: Set<Int> = []
    var events: [String] = []
    var exhausted = false

    func reservePort() -> Int? {
        guard !exhausted else { return nil }
        defer { next += 2 }
        reserved.insert(next)
        return next
    }

    func releasePort(_ port: Int) {
        #expect(reserved.remove(port) != nil, "port \(port) released once, after it was reserved")
        events.append("release \(port)")
    }

    func audioChanged(_ audio: NegotiatedAudio?, for conversation: UUID) {
        guard let audio else { return events.append("stop") }
        let direction = (audio.sends ? "send" : "") + (audio.receives ? "recv" : "")
        events.append("\(audio.codec.encodingName) \(audio.localPort)→\(audio.remoteAddress):\(audio.remotePort) \(direction)")
    }

    func muteChanged(_ muted: Bool, for conversation: UUID) { events.append(muted ? "mute" : "unmute") }

    func sendTones(_ digits: String, for conversation: UUID) { events.append("tones \(digits)") }
}

@Suite("Engine: the audio it hands to the media layer")
struct CallMediaTests {
    /// Starts a call to Bob and returns its INVITE.
    static func start(_ harness: EngineHarness) throws -> SIPRequest {
        try harness.manager.perform([.start(handles: [OutgoingCallTests.bob])])
        return try #require(harness.sent().first?.request)
    }

    @Test("callee: a port per call in its answer; audio from the answer, changed by hold both ways, stopped at the end")
    func calleeLifecycle() throws {
        let media = RecordingMedia()
        let harness = try EngineHarness(media: media)
        let tag = try IncomingCallTests.answered(harness)
        let uuid = try #require(harness.conversation?.uuid)
        try harness.manager.perform([.mute(conversationUUID: uuid, isMuted: true)])
        // The remote side holds us: we stop sending (what it may still send, music on hold, is taken).
        harness.deliver(
            PeerMessages.inDialog("INVITE", localTag: tag, cseq: 2, branch: "z9hG4bK-re-1", contentType: "application/sdp"),
            body: PeerMessages.holdOffer(version: 2))
        let answer = try #require(harness.sent().first)
        #expect(answer.bodyText.contains("m=audio 50000 "), "the re-INVITE's answer keeps the call's port")
        harness.deliver(PeerMessages.inDialog("ACK", localTag: tag, cseq: 2, branch: "z9hG4bK-ack-2"))
        // Our own hold.
        try harness.manager.perform([.pause(conversationUUID: uuid, isPaused: true)])
        let reinvite = try #require(harness.sent().first?.request)
        harness.deliver(PeerMessages.response(200, "OK", to: reinvite, toTag: nil, sdp: true), body: PeerMessages.offer)
        try harness.manager.perform([.end(conversationUUID: uuid)])
        #expect(media.events == [
            "PCMU 50000→127.0.0.1:6000 sendrecv", "mute", "PCMU 50000→127.0.0.1:6000 recv", "PCMU 50000→127.0.0.1:6000 ",
            "stop", "release 50000",
        ])
        #expect(media.reserved.isEmpty)
    }

    @Test("caller: the offer's port, audio once the 200 answers it (PCMA when that is all the peer takes), released at the end")
    func callerLifecycle() throws {
        let media = RecordingMedia()
        let harness = try EngineHarness(media: media)
        let invite = try Self.start(harness)
        #expect(String(decoding: invite.body, as: UTF8.self).contains("m=audio 50000 RTP/AVP 0 8"))
        #expect(media.events.isEmpty, "no audio before the answer")
        let pcmaOnly = PeerMessages.offer.replacingOccurrences(of: "RTP/AVP 0 8", with: "RTP/AVP 8")
            .replacingOccurrences(of: "a=rtpmap:0 PCMU/8000\n", with: "")
        harness.deliver(PeerMessages.response(200, "OK", to: invite, sdp: true), body: pcmaOnly)
        #expect(media.events == ["PCMA 50000→127.0.0.1:6000 sendrecv"])
        try harness.manager.perform([.end(conversationUUID: try #require(harness.conversation?.uuid))])
        #expect(media.events.suffix(2) == ["stop", "release 50000"])
    }

    @Test("a call that never connects gives its port back; no free port means a call without audio, not a failure")
    func portsWithoutAudio() throws {
        let media = RecordingMedia()
        let harness = try EngineHarness(media: media)
        let invite = try Self.start(harness)
        harness.deliver(PeerMessages.response(486, "Busy Here", to: invite))
        #expect(media.events == ["release 50000"])
        media.exhausted = true
        harness.deliver(PeerMessages.invite(callID: "call-2@peer", branch: "z9hG4bK-in-2"), body: PeerMessages.offer)
        _ = harness.sent()
        try harness.manager.perform([.join(conversationUUID: try #require(harness.manager.conversations.last?.uuid))])
        let ok = try #require(harness.sent().first)
        #expect(ok.statusCode == 200)
        #expect(ok.bodyText.contains("m=audio 40000 RTP/AVP 0 8\r\n"), "the configured port, no audio, no telephone-event")
        #expect(media.events.last == "PCMU 40000→127.0.0.1:6000 sendrecv")
        #expect(media.reserved.isEmpty)
    }

    @Test("an offer that refuses the audio stream (port 0) takes no port; none leaks when the call ends")
    func refusedStreamTakesNoPort() throws {
        let media = RecordingMedia()
        let harness = try EngineHarness(media: media)
        harness.deliver(PeerMessages.invite(), body: PeerMessages.offer.replacingOccurrences(of: "m=audio 6000", with: "m=audio 0"))
        _ = harness.sent()
        let uuid = try #require(harness.conversation?.uuid)
        try harness.manager.perform([.join(conversationUUID: uuid)])
        #expect(try #require(harness.sent().first).bodyText.contains("m=audio 0 "))
        try harness.manager.perform([.end(conversationUUID: uuid)])
        #expect(media.reserved.isEmpty && media.next == 50_000, "no port was taken: \(media.events)")
        #expect(!media.events.contains { $0.hasPrefix("PCM") }, "no audio")
    }

    @Test("PlayTone goes in the stream (RFC 4733) when both list telephone-event, as INFO when the peer does not")
    func tonesInStreamOrINFO() throws {
        let media = RecordingMedia()
        let harness = try EngineHarness(media: media)
        let withEvents = PeerMessages.offer.replacingOccurrences(of: "RTP/AVP 0 8", with: "RTP/AVP 0 8 101")
            + "a=rtpmap:101 telephone-event/8000\na=fmtp:101 0-15\n"
        harness.deliver(PeerMessages.invite(), body: withEvents)
        _ = harness.sent()
        let uuid = try #require(harness.conversation?.uuid)
        try harness.manager.perform([.join(conversationUUID: uuid)])
        let ok = try #require(harness.sent().first)
        #expect(ok.bodyText.contains("m=audio 50000 RTP/AVP 0 8 101"), "\(ok.bodyText)")
        #expect(ok.bodyText.contains("a=rtpmap:101 telephone-event/8000"))
        let tone = ConversationAction.playTone(conversationUUID: uuid, digits: "12")
        try harness.manager.perform([tone])
        #expect(harness.sent().isEmpty, "no INFO")
        #expect(media.events.last == "tones 12")
        #expect(tone.state == .running, "done when the tones have had their time")
        harness.environment.advance(by: .milliseconds(719))
        #expect(tone.state == .running, "two tones take 720 ms")
        harness.environment.advance(by: .milliseconds(1))
        #expect(tone.state == .complete)

        // The peer holds us (sendonly): it takes no audio, so tones go as INFO. (Our own hold refuses PlayTone.)
        let tag = try #require(ok.toTag)
        harness.deliver(PeerMessages.inDialog("ACK", localTag: tag, cseq: 1, branch: "z9hG4bK-ack-1"))
        harness.deliver(
            PeerMessages.inDialog("INVITE", localTag: tag, cseq: 2, branch: "z9hG4bK-re-1", contentType: "application/sdp"),
            body: withEvents.replacingOccurrences(of: "o=peer 1 1", with: "o=peer 1 2") + "a=sendonly\n")
        harness.deliver(PeerMessages.inDialog("ACK", localTag: tag, cseq: 2, branch: "z9hG4bK-ack-2"))
        _ = harness.sent()
        try harness.manager.perform([.playTone(conversationUUID: uuid, digits: "3")])
        #expect(harness.sent().compactMap(\.method) == ["INFO"])
        #expect(media.events.last != "tones 3")

        // The plain offer has no telephone-event: INFO, as before; our answer lists none either.
        let plain = RecordingMedia()
        let other = try EngineHarness(media: plain)
        _ = try IncomingCallTests.answered(other)
        try other.manager.perform([.playTone(conversationUUID: try #require(other.conversation?.uuid), digits: "5")])
        #expect(other.sent().map(\.method) == ["INFO"])
        #expect(!plain.events.contains { $0.hasPrefix("tones") })
    }
}
