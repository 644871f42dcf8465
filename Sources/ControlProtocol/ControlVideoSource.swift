import Foundation

/// `{"conversation": "1b4e28ba", "source": "camera:/dev/video2"}`: what one call's video sends.
public struct SetVideoSourceParams: ControlParams {
    /// The conversation.
    public var conversation: String
    /// `camera`, `camera:ID`, `test:PATTERN` or `file:PATH`; null/absent: parleyd's `--video-source`.
    public var source: String?

    /// Params.
    public init(conversation: String, source: String?) {
        self.conversation = conversation
        self.source = source
    }

    /// The forms a source takes.
    public static let forms = ["camera", "camera:", "test:", "file:"]

    /// The members.
    public static let fields = [
        ConversationParams.conversationField,
        ControlField(
            "source", "a string or null", optional: true,
            "`camera` (the first), `camera:ID` (an `id` from `videoDevices`), `test:PATTERN` or `file:PATH` (a regular file in parleyd's `--video-files` folder); null or absent: parleyd's `--video-source`"),
    ]
    /// An example.
    public static let example = SetVideoSourceParams(conversation: "1b4e28ba", source: "camera:/dev/video2")

    /// Not blank; a source of one of the forms, of a sane length (what the form names is checked by parleyd).
    public func validate() throws(ControlError) {
        try ConversationParams.check(conversation, "conversation")
        guard let source else { return }
        guard source.utf8.count <= 4_096, !source.contains("\0"), source == "camera" || source == "test" || Self.forms.dropFirst().contains(where: {
            source.hasPrefix($0) && source.count > $0.count
        }) else {
            throw ControlError(
                .invalidParams, "source must be camera, camera:ID (from videoDevices), test:PATTERN or file:PATH (or null for parleyd's).",
                field: "source")
        }
    }
}

/// One camera of the machine.
public struct VideoDeviceInfo: Codable, Sendable, Equatable {
    /// Its device (V4L2: `/dev/videoN`): `setVideoSource` takes `camera:ID`.
    public var id: String
    /// What people call it.
    public var name: String

    /// A camera.
    public init(id: String, name: String) {
        self.id = id
        self.name = name
    }
}

/// The `videoDevices` method's result.
public struct VideoDevicesResult: Codable, Sendable, Equatable {
    /// Every camera the machine has now.
    public var devices: [VideoDeviceInfo]

    /// A result.
    public init(devices: [VideoDeviceInfo]) { self.devices = devices }
}

/// The `setVideoSource` method's result: what the call's video sends now.
public struct VideoSourceChoice: Codable, Sendable, Equatable {
    /// The conversation's uuid.
    public var conversation: String
    /// The source it sends (parleyd's own when none was chosen).
    public var source: String
    /// Whether it was chosen for this call (false: parleyd's `--video-source`).
    public var chosen: Bool

    /// A result.
    public init(conversation: String, source: String, chosen: Bool) {
        self.conversation = conversation
        self.source = source
        self.chosen = chosen
    }
}

extension VideoDeviceInfo: ControlShape {
    /// One camera.
    public static let noun = ControlNoun("a camera", plural: "cameras")
    /// The members.
    public static let fields = [
        ControlField("id", .string, "its device (V4L2: `/dev/videoN`): `setVideoSource` takes `camera:ID`"),
        ControlField("name", .string, "what people call it"),
    ]
    /// A webcam.
    public static let examples = [VideoDeviceInfo(id: "/dev/video0", name: "Integrated Camera: Integrated C")]
}

extension VideoDevicesResult: ControlShape {
    /// The `videoDevices` method's result.
    public static let noun = ControlNoun("a camera list", plural: "camera lists")
    /// The members.
    public static let fields = [ControlField("devices", .array(.object(VideoDeviceInfo.self)), "every camera the machine has now (empty without one)")]
    /// One camera.
    public static let examples = [VideoDevicesResult(devices: VideoDeviceInfo.examples)]
}

extension VideoSourceChoice: ControlShape {
    /// The `setVideoSource` method's result.
    public static let noun = ControlNoun("a call's video source", plural: "calls' video sources")
    /// The members.
    public static let fields = [
        ControlField("conversation", .string, "the conversation's uuid"),
        ControlField("source", .string, "what its video sends now: `camera[:ID]`, `test:PATTERN` or `file:PATH`"),
        ControlField("chosen", .boolean, "whether it was chosen for this call (false: parleyd's `--video-source`)"),
    ]
    /// A camera for one call.
    public static let examples = [
        VideoSourceChoice(conversation: "8C1F0E4B-2A53-4C2B-9E0A-6D1F3B7A9C21", source: "camera:/dev/video2", chosen: true),
        VideoSourceChoice(conversation: "8C1F0E4B-2A53-4C2B-9E0A-6D1F3B7A9C21", source: "test:smpte", chosen: false),
    ]
}
