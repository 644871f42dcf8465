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
    var codecs: [SDPCodec] = [.pcmu, .pcma]
    var carriesSRTP = false
    /// The SRTP keys of the last audio handed over (nil: plain).
    var lastKeys: SRTPKeying?

    func reserveEndpoint(for conversation: UUID) -> MediaEndpoint? {
        guard !exhausted else { return nil }
        defer { next += 2 }
        reserved.insert(next)
        return MediaEndpoint(port: next)
    }

    func releaseEndpoint(_ endpoint: MediaEndpoint, of conversation: UUID) {
        #expect(reserved.remove(endpoint.port) != nil, "port \(endpoint.port) released once, after it was reserved")
        events.append("release \(endpoint.port)")
    }

    func audioChanged(_ audio: NegotiatedAudio?, for conversation: UUID) {
        guard let audio else { return events.append("stop") }
        lastKeys = audio.srtp
        let direction = (audio.sends ? "send" : "") + (audio.receives ? "recv" : "")
        let types = audio.codec == .opus ? " pt \(audio.payloadType)/\(audio.localPayloadType)" : ""
        let unconfirmed = audio.peerConfirmed ? "" : " (before the ACK)"
        events.append("\(audio.codec.encodingName) \(audio.localPort)→\(audio.remoteAddress):\(audio.remotePort) \(direction)\(types)\(unconfirmed)")
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
        let reinvite = try #require(harness.sent().first { $0.method == "INVITE" }?.request)
        harness.deliver(PeerMessages.response(200, "OK", to: reinvite, toTag: nil, sdp: true), body: PeerMessages.offer)
        try harness.manager.perform([.end(conversationUUID: uuid)])
        // Until the ACK comes the media layer sends nothing (a spoofed INVITE draws no media); then it does.
        #expect(media.events == [
            "PCMU 50000→127.0.0.1:6000 sendrecv (before the ACK)", "PCMU 50000→127.0.0.1:6000 sendrecv", "mute", "PCMU 50000→127.0.0.1:6000 recv", "PCMU 50000→127.0.0.1:6000 ",
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
        #expect(media.events.last == "PCMU 40000→127.0.0.1:6000 sendrecv (before the ACK)")
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

    @Test("a call whose audio was refused (m=audio 0) gets it back with a later offer: a port, then audio; released at the end")
    func refusedStreamComesBack() throws {
        let media = RecordingMedia()
        let harness = try EngineHarness(media: media)
        harness.deliver(PeerMessages.invite(), body: PeerMessages.offer.replacingOccurrences(of: "m=audio 6000", with: "m=audio 0"))
        let tag = try #require(harness.sent().first?.toTag)
        let uuid = try #require(harness.conversation?.uuid)
        try harness.manager.perform([.join(conversationUUID: uuid)])
        #expect(try #require(harness.sent().first).bodyText.contains("m=audio 0 "))
        harness.deliver(PeerMessages.inDialog("ACK", localTag: tag, cseq: 1, branch: "z9hG4bK-ack-1"))
        harness.deliver(
            PeerMessages.inDialog("INVITE", localTag: tag, cseq: 2, branch: "z9hG4bK-re-audio", contentType: "application/sdp"),
            body: PeerMessages.offer.replacingOccurrences(of: "o=peer 1 1", with: "o=peer 1 2"))
        let answer = try #require(harness.sent().first)
        #expect(answer.statusCode == 200 && answer.bodyText.contains("m=audio 50000 "), "\(answer.bodyText)")
        harness.deliver(PeerMessages.inDialog("ACK", localTag: tag, cseq: 2, branch: "z9hG4bK-ack-2"))
        #expect(media.events.last == "PCMU 50000→127.0.0.1:6000 sendrecv", "\(media.events)")
        try harness.manager.perform([.end(conversationUUID: uuid)])
        #expect(media.reserved.isEmpty && media.events.last == "release 50000", "\(media.events)")
    }

    @Test("audio, then m=audio 0, then audio again: the call gets its own port back (no second pair leaks)")
    func audioOffOn() throws {
        let media = RecordingMedia()
        let harness = try EngineHarness(media: media)
        let tag = try IncomingCallTests.answered(harness)
        _ = harness.sent()
        for (cseq, port) in [(2, "0"), (3, "6000")] {
            harness.deliver(
                PeerMessages.inDialog("INVITE", localTag: tag, cseq: cseq, branch: "z9hG4bK-re-\(cseq)", contentType: "application/sdp"),
                body: PeerMessages.offer.replacingOccurrences(of: "o=peer 1 1", with: "o=peer 1 \(cseq)")
                    .replacingOccurrences(of: "m=audio 6000", with: "m=audio \(port)"))
            let answer = try #require(harness.sent().first)
            #expect(answer.bodyText.contains(port == "0" ? "m=audio 0 " : "m=audio 50000 "), "\(answer.bodyText)")
            harness.deliver(PeerMessages.inDialog("ACK", localTag: tag, cseq: cseq, branch: "z9hG4bK-ack-\(cseq)"))
        }
        try harness.manager.perform([.end(conversationUUID: try #require(harness.conversation?.uuid))])
        #expect(media.next == 50_002 && media.reserved.isEmpty, "one pair, released: \(media.events)")
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

extension CallMediaTests {
    @Test("a media layer that carries opus: an offer listing it first is answered with opus at the offer's payload type; tones then go as INFO")
    func opusWhenOffered() throws {
        let media = RecordingMedia()
        media.codecs = [.pcmu, .pcma, .opus]
        let harness = try EngineHarness(media: media)
        let linphone = PeerMessages.offer.replacingOccurrences(of: "RTP/AVP 0 8", with: "RTP/AVP 96 0 8 100")
            + "a=rtpmap:96 opus/48000/2\na=rtpmap:100 telephone-event/8000\n"
        harness.deliver(PeerMessages.invite(), body: linphone)
        _ = harness.sent()
        let uuid = try #require(harness.conversation?.uuid)
        try harness.manager.perform([.join(conversationUUID: uuid)])
        let ok = try #require(harness.sent().first)
        #expect(ok.bodyText.contains("m=audio 50000 RTP/AVP 96 0 8 100\r\n"), "\(ok.bodyText)")
        #expect(ok.bodyText.contains("a=rtpmap:96 opus/48000/2\r\n"))
        #expect(ok.bodyText.contains("a=rtcp:50001\r\n"), "RFC 3605: RTCP on the next port, said")
        #expect(media.events == ["opus 50000→127.0.0.1:6000 sendrecv pt 96/96 (before the ACK)"])
        harness.deliver(PeerMessages.inDialog("ACK", localTag: try #require(ok.toTag), cseq: 1, branch: "z9hG4bK-ack-1"))
        try harness.manager.perform([.playTone(conversationUUID: uuid, digits: "4")])
        #expect(harness.sent().compactMap(\.method) == ["INFO"], "telephone-event/8000 does not go beside 48 kHz opus")

        // Our own offer lists opus last, at 111: two parleyd keep G.711.
        try harness.manager.perform([.start(handles: [OutgoingCallTests.bob])])
        let invite = try #require(harness.sent().first { $0.method == "INVITE" }?.request)
        let offer = String(decoding: invite.body, as: UTF8.self)
        #expect(offer.contains("RTP/AVP 0 8 111 101\r\n") && offer.contains("a=rtpmap:111 opus/48000/2\r\n"), "\(offer)")
    }
}

@Suite("Engine: a frontend's own media (--media external)")
struct ExternalMediaTests {
    /// The engine's `mediaChanged` events, in order, as "codec local→remote direction" or "none".
    final class MediaEvents: @unchecked Sendable {
        var seen: [String] = []
    }

    static func observe(_ harness: EngineHarness) -> MediaEvents {
        let events = MediaEvents()
        harness.engine.observeEvents { event in
            guard case .mediaChanged(_, let audio, _) = event else { return }
            events.seen.append(audio.map { audio in
                let direction = (audio.sends ? "send" : "") + (audio.receives ? "recv" : "")
                return "\(audio.codec.encodingName) \(audio.localAddress):\(audio.localPort)→"
                    + "\(audio.remoteAddress):\(audio.remotePort) \(direction) ptime \(audio.ptime.map(String.init) ?? "-")"
            } ?? "none")
        }
        return events
    }

    @Test("caller: the offer gives the frontend's address and port and no telephone-event; every change is an event")
    func callerUsesFrontendEndpoint() throws {
        let media = ExternalMedia()
        let harness = try EngineHarness(media: media)
        let events = Self.observe(harness)
        let start = ConversationAction.start(handles: [OutgoingCallTests.bob])
        media.setEndpoint(MediaEndpoint(address: "192.0.2.50", port: 7000), for: start.conversationUUID)
        try harness.manager.perform([start])
        let invite = try #require(harness.sent().first?.request)
        let offer = String(decoding: invite.body, as: UTF8.self)
        #expect(offer.contains("c=IN IP4 192.0.2.50\r\n"), "\(offer)")
        #expect(offer.contains("m=audio 7000 RTP/AVP 0 8\r\n"), "no telephone-event: the stream is the frontend's")
        #expect(media.waitingEndpoints == 0, "taken by the first description")
        #expect(events.seen.isEmpty, "nothing negotiated before the answer")
        harness.deliver(PeerMessages.response(200, "OK", to: invite, sdp: true), body: PeerMessages.offer + "a=ptime:30\n")
        #expect(events.seen == ["PCMU 192.0.2.50:7000→127.0.0.1:6000 sendrecv ptime 30"])
        let uuid = start.conversationUUID
        #expect(harness.engine.audio(of: uuid)?.remotePort == 6000)

        // Our hold: the re-INVITE keeps the frontend's endpoint; we neither send nor take.
        try harness.manager.perform([.pause(conversationUUID: uuid, isPaused: true)])
        let reinvite = try #require(harness.sent().first { $0.method == "INVITE" }?.request)
        #expect(String(decoding: reinvite.body, as: UTF8.self).contains("c=IN IP4 192.0.2.50\r\n"))
        #expect(String(decoding: reinvite.body, as: UTF8.self).contains("m=audio 7000 "))
        let held = PeerMessages.offer.replacingOccurrences(of: "o=peer 1 1", with: "o=peer 1 2") + "a=recvonly\n"
        harness.deliver(PeerMessages.response(200, "OK", to: reinvite, sdp: true), body: held)
        #expect(events.seen.last == "PCMU 192.0.2.50:7000→127.0.0.1:6000  ptime -")

        // Tones go as INFO: the engine has no stream to put them in.
        try harness.manager.perform([.pause(conversationUUID: uuid, isPaused: false)])
        let resume = try #require(harness.sent().first { $0.method == "INVITE" }?.request)
        harness.deliver(PeerMessages.response(200, "OK", to: resume, sdp: true), body: PeerMessages.offer.replacingOccurrences(of: "o=peer 1 1", with: "o=peer 1 3"))
        _ = harness.sent()
        try harness.manager.perform([.playTone(conversationUUID: uuid, digits: "7")])
        #expect(harness.sent().compactMap(\.method) == ["INFO"])

        try harness.manager.perform([.end(conversationUUID: uuid)])
        #expect(events.seen.last == "none")
        #expect(harness.engine.audio(of: uuid) == nil)
    }

    @Test("callee: the answer gives the endpoint named before the join; without one, the fallback port and no leak")
    func calleeEndpointOrFallback() throws {
        let media = ExternalMedia()
        let harness = try EngineHarness(media: media)
        let events = Self.observe(harness)
        harness.deliver(PeerMessages.invite(), body: PeerMessages.offer)
        _ = harness.sent()
        let uuid = try #require(harness.conversation?.uuid)
        media.setEndpoint(MediaEndpoint(port: 7002), for: uuid)
        try harness.manager.perform([.join(conversationUUID: uuid)])
        let ok = try #require(harness.sent().first)
        #expect(ok.bodyText.contains("c=IN IP4 127.0.0.1\r\n"), "the node's own address when the frontend gave none")
        #expect(ok.bodyText.contains("m=audio 7002 RTP/AVP 0 8\r\n"))
        #expect(events.seen == ["PCMU 127.0.0.1:7002→127.0.0.1:6000 sendrecv ptime -"])

        harness.deliver(PeerMessages.invite(callID: "call-2@peer", branch: "z9hG4bK-in-2"), body: PeerMessages.offer)
        _ = harness.sent()
        try harness.manager.perform([.join(conversationUUID: try #require(harness.manager.conversations.last?.uuid))])
        #expect(try #require(harness.sent().first).bodyText.contains("m=audio 40000 RTP/AVP 0 8\r\n"), "the configured port")
        #expect(media.waitingEndpoints == 0)

        // An offer that refuses audio (port 0) takes no endpoint: the one named for it goes when the call ends.
        harness.deliver(
            PeerMessages.invite(callID: "call-3@peer", branch: "z9hG4bK-in-3"),
            body: PeerMessages.offer.replacingOccurrences(of: "m=audio 6000", with: "m=audio 0"))
        _ = harness.sent()
        let refusing = try #require(harness.manager.conversations.last?.uuid)
        media.setEndpoint(MediaEndpoint(port: 7004), for: refusing)
        try harness.manager.perform([.join(conversationUUID: refusing)])
        #expect(try #require(harness.sent().first).bodyText.contains("m=audio 0 "))
        #expect(media.waitingEndpoints == 1, "not taken by the answer")
        try harness.manager.perform([.end(conversationUUID: refusing)])
        #expect(harness.manager.conversation(refusing) == nil)
        #expect(media.waitingEndpoints == 0, "dropped when the call left")
    }
}
