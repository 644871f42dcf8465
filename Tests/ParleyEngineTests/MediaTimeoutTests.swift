import ConversationKit
import Foundation
import ParleyEngine
import Testing

/// A media handler whose packet counts the test sets (``RecordingMedia`` for the rest).
final class CountingMedia: CallMediaHandler {
    let recording = RecordingMedia()
    /// The packets that arrived per call; a call without an entry has a count of 0.
    var arrived: [UUID: Int] = [:]
    /// Whether the handler can count at all (false: `--media external`).
    var counts = true

    func reserveEndpoint(for conversation: UUID) -> MediaEndpoint? { recording.reserveEndpoint(for: conversation) }
    func releaseEndpoint(_ endpoint: MediaEndpoint, of conversation: UUID) { recording.releaseEndpoint(endpoint, of: conversation) }
    func audioChanged(_ audio: NegotiatedAudio?, for conversation: UUID) { recording.audioChanged(audio, for: conversation) }
    func muteChanged(_ muted: Bool, for conversation: UUID) {}
    func sendTones(_ digits: String, for conversation: UUID) {}
    func packetsArrived(for conversation: UUID) -> Int? { counts ? arrived[conversation, default: 0] : nil }
}

@Suite("Engine: a connected call whose peer stopped sending media ends (mediaTimeout)")
struct MediaTimeoutTests {
    static func harness(_ media: CountingMedia, timeout: Duration? = .seconds(30)) throws -> EngineHarness {
        try EngineHarness(media: media) { $0.mediaTimeout = timeout }
    }

    @Test("no packet for the timeout: BYE, and the call ends as mediaTimeout; packets arriving keep it up")
    func silentPeerIsHungUp() throws {
        let media = CountingMedia()
        let harness = try Self.harness(media)
        _ = try IncomingCallTests.answered(harness)
        let uuid = try #require(harness.conversation?.uuid)
        // Packets arrive for 40 s: the call stays up well past the timeout.
        for second in 1...40 {
            media.arrived[uuid] = second * 50
            harness.environment.advance(by: .seconds(1))
        }
        #expect(harness.conversation?.state == .joined)
        #expect(harness.sent().isEmpty)
        // Then nothing: the call ends between 30 and 35 s later (checks every 5 s), with a BYE.
        harness.environment.advance(by: .seconds(29))
        #expect(harness.conversation?.state == .joined, "not before the timeout")
        harness.environment.advance(by: .seconds(6))
        let sent = harness.sent().map(\.method)
        #expect(!sent.isEmpty && Set(sent) == ["BYE"], "a BYE (and its retransmissions): \(sent)")
        #expect(harness.transitions.states.last == "left(mediaTimeout)")
        #expect(media.recording.events.suffix(2) == ["stop", "release 50000"])
    }

    @Test("a call on hold (either side) is not timed out; resumed, it is watched again from the resume")
    func holdIsNotATimeout() throws {
        let media = CountingMedia()
        let harness = try Self.harness(media)
        let tag = try IncomingCallTests.answered(harness)
        // The peer holds us: it may send nothing for minutes.
        harness.deliver(
            PeerMessages.inDialog("INVITE", localTag: tag, cseq: 2, branch: "z9hG4bK-re-1", contentType: "application/sdp"),
            body: PeerMessages.holdOffer(version: 2))
        #expect(harness.sent().map(\.statusCode) == [200])
        harness.deliver(PeerMessages.inDialog("ACK", localTag: tag, cseq: 2, branch: "z9hG4bK-ack-2"))
        harness.environment.advance(by: .seconds(120))
        #expect(harness.conversation?.state == .joined)
        #expect(harness.sent().isEmpty)
        // It resumes and then sends nothing: a full timeout from the resume.
        harness.deliver(
            PeerMessages.inDialog("INVITE", localTag: tag, cseq: 3, branch: "z9hG4bK-re-2", contentType: "application/sdp"),
            body: PeerMessages.offer.replacingOccurrences(of: "o=peer 1 1", with: "o=peer 1 3"))
        #expect(harness.sent().map(\.statusCode) == [200])
        harness.deliver(PeerMessages.inDialog("ACK", localTag: tag, cseq: 3, branch: "z9hG4bK-ack-3"))
        harness.environment.advance(by: .seconds(25))
        #expect(harness.conversation?.state == .joined)
        harness.environment.advance(by: .seconds(10))
        #expect(harness.transitions.states.last == "left(mediaTimeout)")
    }

    @Test("off (nil), or a media layer that cannot count: a silent call stays up")
    func offOrUncounted() throws {
        for (timeout, counts) in [(nil, true), (Duration.seconds(30), false)] as [(Duration?, Bool)] {
            let media = CountingMedia()
            media.counts = counts
            let harness = try Self.harness(media, timeout: timeout)
            _ = try IncomingCallTests.answered(harness)
            harness.environment.advance(by: .seconds(300))
            #expect(harness.conversation?.state == .joined)
            #expect(harness.sent().isEmpty)
        }
    }

    @Test("the configuration refuses a timeout under a second")
    func shortTimeoutRefused() {
        var configuration = EngineConfiguration(listenAddresses: [.init(kind: .udp, host: "127.0.0.1", port: 5070)])
        configuration.mediaTimeout = .milliseconds(500)
        #expect(configuration.problems == ["the media timeout must be at least a second"])
    }
}
