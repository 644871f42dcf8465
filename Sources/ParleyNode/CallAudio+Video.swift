import CallHistory
import Foundation
import Media
import ParleyEngine
import SIPMessages
import Synchronization

/// Calls' video figures (any thread), by conversation: the sessions that ended (each upgrade starts one) summed, and
/// the current session's last reading; kept after a downgrade (the call's video so far), dropped when the call is
/// over. A reading for a call not opened (or forgotten: a session's last reading after its call ended) is dropped.
final class VideoFigures: Sendable {
    private let figures = Mutex<[UUID: (ended: VideoQuality?, current: VideoQuality?)]>([:])

    /// A call's video starts being counted (its first session), if it was not.
    func open(_ conversation: UUID) {
        figures.withLock { if $0[conversation] == nil { $0[conversation] = (nil, nil) } }
    }

    /// The current session's reading.
    func report(_ reading: VideoQuality, for conversation: UUID) {
        figures.withLock { if $0[conversation] != nil { $0[conversation]?.current = reading } }
    }

    /// The current session ended: its figures join the call's.
    func sessionEnded(_ conversation: UUID) {
        figures.withLock { entry in
            guard let known = entry[conversation], let current = known.current else { return }
            entry[conversation] = (known.ended.map { $0.adding(current) } ?? current, nil)
        }
    }

    /// The call is over.
    func forget(_ conversation: UUID) { figures.withLock { $0[conversation] = nil } }

    /// A call's figures: counts over every session, rates and size of the current one (zero rates between sessions).
    subscript(conversation: UUID) -> VideoQuality? {
        figures.withLock { entry in
            guard let known = entry[conversation] else { return nil }
            switch (known.ended, known.current) {
            case (nil, nil): return nil
            case (let ended?, nil): return ended.stopped
            case (nil, let current?): return current
            case (let ended?, let current?): return ended.adding(current)
            }
        }
    }
}

extension VideoQuality {
    /// These counts and `later`'s added; the rates and size are `later`'s.
    func adding(_ later: VideoQuality) -> VideoQuality {
        var sum = later
        sum.framesSent += framesSent
        sum.framesReceived += framesReceived
        sum.keyframesSent += keyframesSent
        sum.keyframesReceived += keyframesReceived
        sum.keyframeRequestsReceived += keyframeRequestsReceived
        sum.keyframeRequestsSent += keyframeRequestsSent
        sum.nacksReceived += nacksReceived
        sum.nacksSent += nacksSent
        return sum
    }

    /// The same with no video flowing: rates zero.
    var stopped: VideoQuality {
        var copy = self
        (copy.frameRateSent, copy.frameRateReceived, copy.kilobitsSent, copy.kilobitsReceived) = (0, 0, 0, 0)
        return copy
    }
}

/// One call's video in a node: the port pair it reserved (kept for the call's life, so a downgrade and a new upgrade
/// reuse it) and its session while video is on.
struct CallVideo {
    /// The reserved RTP/RTCP pair.
    let reservation: RTPPortPool.Reservation
    /// The session carrying the video, while the negotiated video is on.
    var session: VideoSession?
    /// Sessions started so far (each upgrade starts one): the second's file is `…-video-2`.
    var started = 0
}

/// Calls' video for the engine (`--video`): a ``VideoSession`` per call, on a second port pair from the node's pool,
/// started, changed and stopped as the negotiated video comes and goes (the audio session is never touched).
extension CallAudio {
    /// Whether calls carry video: the node takes video and GStreamer has VP8's elements.
    var carriesVideo: Bool { configuration.video != nil && MediaSupport.videoProblem == nil }

    func videoPort(for conversation: UUID) -> Int? {
        if let known = videoCalls[conversation] { return known.reservation.port }
        guard carriesVideo, let reservation = pool.reserve() else { return nil }
        videoCalls[conversation] = CallVideo(reservation: reservation)
        return reservation.port
    }

    func videoChanged(_ video: NegotiatedVideo?, for conversation: UUID) {
        guard let configuration = configuration.video, var call = videoCalls[conversation] else { return }
        guard let video, let parameters = videoParameters(video, of: conversation) else {
            if let session = call.session {
                call.session = nil
                videoCalls[conversation] = call
                log.info("\(conversation): video stopped")
                // The path is read on the session's queue, once its file is complete.
                session.stop { [log, videoFigures] in
                    videoFigures.sessionEnded(conversation)
                    if let file = session.recordingPath { log.info("\(conversation): video recording complete: \(file)") }
                }
            }
            return
        }
        if let session = call.session {
            session.update(parameters)
            return
        }
        call.started += 1
        videoFigures.open(conversation)
        call.session = VideoSession(
            reservation: call.reservation, parameters: parameters, source: chosenVideoSources[conversation] ?? configuration.source, sink: configuration.sink,
            format: configuration.format, recordingName: conversation.uuidString + "-video" + (call.started > 1 ? "-\(call.started)" : ""),
            report: { [log] failure in log.error("\(conversation): \(failure)") },
            notice: { [log] text in log.info("\(conversation): \(text)") },
            statisticsReported: { [videoFigures, codec = video.encodingName] figures in
                videoFigures.report(Self.quality(figures, codec: codec), for: conversation)
            })
        videoCalls[conversation] = call
        log.info("\(conversation): video \(video.encodingName) to \(video.remoteAddress):\(video.remotePort) from port "
            + "\(video.localPort), \(Self.protection(video))")
    }

    func releaseVideo(of conversation: UUID) {
        chosenVideoSources[conversation] = nil
        guard let call = videoCalls.removeValue(forKey: conversation) else { return }
        pool.release(call.reservation.port)
        // After the session's last reading (if one runs), on its queue.
        guard let session = call.session else { return videoFigures.forget(conversation) }
        session.stop { [videoFigures] in videoFigures.forget(conversation) }
    }

    /// How the log's video line says the stream is protected (never a key).
    static func protection(_ video: NegotiatedVideo) -> String {
        if let srtp = video.srtp { return "encrypted: SRTP \(srtp.suite.rawValue) keyed by SDES" }
        if let dtls = video.dtls { return "encrypted: SRTP keyed by its own DTLS handshake (we are the \(dtls.isClient ? "client" : "server"))" }
        return "not encrypted"
    }

    /// A video session's figures as the engine and the history keep them.
    static func quality(_ figures: VideoStatistics, codec: String) -> VideoQuality {
        VideoQuality(
            codec: codec, framesSent: figures.framesSent, framesReceived: figures.framesReceived, frameRateSent: figures.sentFrameRate,
            frameRateReceived: figures.receivedFrameRate, width: figures.receivedWidth, height: figures.receivedHeight,
            keyframesSent: figures.keyframesSent, keyframesReceived: figures.keyframesReceived,
            keyframeRequestsReceived: figures.keyframeRequestsReceived, keyframeRequestsSent: figures.keyframeRequestsSent,
            nacksReceived: figures.nacksReceived, nacksSent: figures.nacksSent, kilobitsSent: figures.sentKilobits,
            kilobitsReceived: figures.receivedKilobits)
    }

    /// The media layer's stream for what the descriptions agreed; nil (said) for a codec this GStreamer lacks.
    private func videoParameters(_ video: NegotiatedVideo, of conversation: UUID) -> VideoStreamParameters? {
        guard let codec = VideoCodec(encodingName: video.encodingName), codec == .vp8 || MediaSupport.hasH264 else {
            log.error("\(conversation): the call agreed on \(video.encodingName) video, which this GStreamer cannot carry: no video")
            return nil
        }
        var parameters = VideoStreamParameters(
            codec: codec, payloadType: video.payloadType, receivedPayloadType: video.localPayloadType,
            remoteHost: video.remoteAddress, remotePort: video.remotePort, sends: video.sends, receives: video.receives)
        if MediaDestination.isUnspecified(video.remoteAddress)
            || MediaDestination.refusal(of: video.remoteAddress, local: host) != nil
        {
            parameters.remoteHost = "0.0.0.0"
            parameters.sends = false
        }
        if let dtls = video.dtls {
            guard let encryption = encryption(dtls) else {
                log.error("\(conversation): the call agreed on DTLS-SRTP video and this node has no certificate: no video")
                return nil
            }
            parameters.encryption = encryption
        } else {
            parameters.encryption = Self.encryption(video.srtp)
        }
        parameters.awaitsPeer = !video.peerConfirmed
        (parameters.retransmissionPayloadType, parameters.receivedRetransmissionPayloadType) =
            (video.retransmission?.payloadType, video.retransmission?.localPayloadType)
        parameters.peerFeedback = []
        if video.peerFeedback.contains(.nack) { parameters.peerFeedback.insert(.nack) }
        if video.peerFeedback.contains(.pli) { parameters.peerFeedback.insert(.pli) }
        if video.peerFeedback.contains(.fir) { parameters.peerFeedback.insert(.fir) }
        parameters.maxFrameSize = video.maxFrameSize
        parameters.maxFrameRate = video.maxFrameRate
        return parameters
    }
}
