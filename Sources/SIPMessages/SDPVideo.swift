import Foundation

/// One video payload format of an `m=video` stream: its payload type and, from `a=rtpmap`, its encoding name.
public struct SDPVideoFormat: Sendable, Hashable {
    /// The payload type (dynamic, 96–127, for the formats Parley offers).
    public var payloadType: Int
    /// The encoding name (`VP8`, `H264`), empty when the stream gave no rtpmap for it.
    public var encodingName: String

    /// A format.
    public init(payloadType: Int, encodingName: String) {
        self.payloadType = payloadType
        self.encodingName = encodingName
    }

    /// What Parley offers and accepts, in order of preference: VP8 and H.264 at 90 kHz. Only signalling: the video
    /// itself is not carried yet.
    public static let supported = [SDPVideoFormat(payloadType: 96, encodingName: "VP8"), SDPVideoFormat(payloadType: 97, encodingName: "H264")]
}

/// The `m=video` stream of a session description (RFC 3264): negotiated and reported, not carried.
public struct SDPVideo: Sendable, Hashable {
    /// The RTP port; 0 when the stream is refused or removed.
    public var port: Int
    /// The transport protocol ("RTP/AVP").
    public var transport: String
    /// The formats, in the order listed.
    public var formats: [SDPVideoFormat]
    /// The stream's own direction attribute, if it has one.
    public var direction: SDPDirection?

    /// A video stream.
    public init(port: Int, transport: String = "RTP/AVP", formats: [SDPVideoFormat] = SDPVideoFormat.supported, direction: SDPDirection? = nil) {
        self.port = port
        self.transport = transport
        self.formats = formats
        self.direction = direction
    }

    /// Whether video is on: the stream has a port.
    public var isActive: Bool { port != 0 }

    /// The answer to this offered stream (RFC 3264 §6): the offered formats we support, at `port`; port 0 — the
    /// stream refused, but still answered so the m-lines line up — when we take no video (`port` nil), the offer
    /// refused it, or no format is common.
    public func answer(port: Int?, direction answerDirection: SDPDirection? = nil) -> SDPVideo {
        let common = formats.filter { offered in
            SDPVideoFormat.supported.contains { $0.encodingName.caseInsensitiveCompare(offered.encodingName) == .orderedSame }
        }
        guard let port, isActive, !common.isEmpty, transport.uppercased() == "RTP/AVP" else {
            return SDPVideo(port: 0, transport: transport, formats: Array(formats.prefix(1)))
        }
        return SDPVideo(port: port, transport: transport, formats: common, direction: answerDirection)
    }

    /// The stream's SDP lines (`m=`, one `a=rtpmap` per named format, the direction).
    func lines(direction sessionDirection: SDPDirection) -> [String] {
        var lines = ["m=video \(port) \(transport)" + formats.map { " \($0.payloadType)" }.joined()]
        lines += formats.filter { !$0.encodingName.isEmpty }.map { "a=rtpmap:\($0.payloadType) \($0.encodingName)/90000" }
        lines.append("a=\((direction ?? sessionDirection).rawValue)")
        return lines
    }
}
