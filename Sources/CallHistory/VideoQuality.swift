import Foundation

/// A call's video figures, as the media layer measured them and the history record keeps them (``CallQuality/video``).
public struct VideoQuality: Sendable, Hashable, Codable {
    /// The codec's encoding name (`VP8`, `H264`).
    public var codec: String
    /// Frames sent and received since video began.
    public var framesSent: Int
    public var framesReceived: Int
    /// Frames per second each way over the last second measured.
    public var frameRateSent: Double
    public var frameRateReceived: Double
    /// The size of the pictures received.
    public var width: Int
    public var height: Int
    /// Keyframes sent and received.
    public var keyframesSent: Int
    public var keyframesReceived: Int
    /// Keyframes the peer asked for (PLI, FIR), and we asked for.
    public var keyframeRequestsReceived: Int
    public var keyframeRequestsSent: Int
    /// Generic NACKs the peer sent about our packets, and we about its.
    public var nacksReceived: Int
    public var nacksSent: Int
    /// Kilobits per second each way over the last second measured.
    public var kilobitsSent: Int
    public var kilobitsReceived: Int

    /// Figures.
    public init(
        codec: String, framesSent: Int = 0, framesReceived: Int = 0, frameRateSent: Double = 0, frameRateReceived: Double = 0,
        width: Int = 0, height: Int = 0, keyframesSent: Int = 0, keyframesReceived: Int = 0, keyframeRequestsReceived: Int = 0,
        keyframeRequestsSent: Int = 0, nacksReceived: Int = 0, nacksSent: Int = 0, kilobitsSent: Int = 0, kilobitsReceived: Int = 0
    ) {
        self.codec = codec
        (self.framesSent, self.framesReceived, self.frameRateSent, self.frameRateReceived) =
            (framesSent, framesReceived, frameRateSent, frameRateReceived)
        (self.width, self.height, self.keyframesSent, self.keyframesReceived) = (width, height, keyframesSent, keyframesReceived)
        (self.keyframeRequestsReceived, self.keyframeRequestsSent, self.nacksReceived, self.nacksSent) =
            (keyframeRequestsReceived, keyframeRequestsSent, nacksReceived, nacksSent)
        (self.kilobitsSent, self.kilobitsReceived) = (kilobitsSent, kilobitsReceived)
    }
}
