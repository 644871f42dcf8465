import Foundation

/// `{"conversation": "1b4e28ba", "source": "…", "sink": "…"}`: the devices one call plays on.
public struct SetAudioDeviceParams: ControlParams {
    /// The conversation.
    public var conversation: String
    /// The microphone's id (`audioDevices`), or null/absent: the default.
    public var source: String?
    /// The speaker's id, or null/absent: the default.
    public var sink: String?

    /// Params.
    public init(conversation: String, source: String? = nil, sink: String? = nil) {
        self.conversation = conversation
        self.source = source
        self.sink = sink
    }

    /// The members.
    public static let fields = [
        ConversationParams.conversationField,
        ControlField("source", "a string or null", optional: true, "the microphone's `id` from `audioDevices`; null or absent: the default (followed as it moves)"),
        ControlField("sink", "a string or null", optional: true, "the speaker's `id` from `audioDevices`; null or absent: the default"),
    ]
    /// An example.
    public static let example = SetAudioDeviceParams(conversation: "1b4e28ba", source: nil, sink: "alsa_output.usb-headset")

    /// Not blank; ids of a sane length.
    public func validate() throws(ControlError) {
        try ConversationParams.check(conversation, "conversation")
        for (name, id) in [("source", source), ("sink", sink)] where (id.map { $0.isEmpty || $0.utf8.count > 512 } ?? false) {
            throw ControlError(.invalidParams, "\(name) must be a device id from audioDevices (or null for the default).", field: name)
        }
    }
}

/// One audio device of the desktop.
public struct AudioDeviceInfo: Codable, Sendable, Equatable {
    /// `source` (a microphone) or `sink` (a speaker).
    public var kind: String
    /// The sound server's name for it (what `setAudioDevice` takes).
    public var id: String
    /// What people call it.
    public var name: String
    /// Whether it is the default of its kind.
    public var isDefault: Bool

    /// A device.
    public init(kind: String, id: String, name: String, isDefault: Bool) {
        self.kind = kind
        self.id = id
        self.name = name
        self.isDefault = isDefault
    }
}

/// The `audioDevices` method's result.
public struct AudioDevicesResult: Codable, Sendable, Equatable {
    /// Every source and sink the sound server has now.
    public var devices: [AudioDeviceInfo]

    /// A result.
    public init(devices: [AudioDeviceInfo]) { self.devices = devices }
}

/// The `setAudioDevice` method's result: the call's devices now (null: the default).
public struct AudioDeviceChoice: Codable, Sendable, Equatable {
    /// The conversation's uuid.
    public var conversation: String
    /// Its microphone, or null for the default.
    @Nullable public var source: String?
    /// Its speaker, or null for the default.
    @Nullable public var sink: String?

    /// A result.
    public init(conversation: String, source: String?, sink: String?) {
        self.conversation = conversation
        self.source = source
        self.sink = sink
    }
}

/// `audioRouteChanged`: the devices calls play on changed (a new default, or a call's chosen device went away).
public struct AudioRouteChanged: Codable, Sendable, Equatable {
    /// The call whose chosen device went away (it plays on the default now), or null for a new default.
    @Nullable public var conversation: String?
    /// The source and sink in use now (for a call, its own; else the defaults).
    @Nullable public var source: String?
    @Nullable public var sink: String?
    /// Why.
    public var reason: String

    /// An event.
    public init(conversation: String?, source: String?, sink: String?, reason: String) {
        self.conversation = conversation
        self.source = source
        self.sink = sink
        self.reason = reason
    }
}

extension AudioDeviceInfo: ControlShape {
    /// One device.
    public static let noun = ControlNoun("an audio device", plural: "audio devices")
    /// The members.
    public static let fields = [
        ControlField("kind", .oneOf(["source", "sink"]), "a microphone (`source`) or a speaker (`sink`)"),
        ControlField("id", .string, "the sound server's name for it: what `setAudioDevice` takes"),
        ControlField("name", .string, "what people call it"),
        ControlField("isDefault", .boolean, "whether it is the default of its kind"),
    ]
    /// A headset.
    public static let examples = [AudioDeviceInfo(kind: "sink", id: "alsa_output.usb-headset", name: "USB Headset", isDefault: true)]
}

extension AudioDevicesResult: ControlShape {
    /// The `audioDevices` method's result.
    public static let noun = ControlNoun("a device list", plural: "device lists")
    /// The members.
    public static let fields = [ControlField("devices", .array(.object(AudioDeviceInfo.self)), "every source and sink the sound server has now (empty without one)")]
    /// One device.
    public static let examples = [AudioDevicesResult(devices: AudioDeviceInfo.examples)]
}

extension AudioDeviceChoice: ControlShape {
    /// The `setAudioDevice` method's result.
    public static let noun = ControlNoun("a call's devices", plural: "calls' devices")
    /// The members.
    public static let fields = [
        ControlField("conversation", .string, "the conversation's uuid"),
        ControlField("source", .nullable(.string), "its microphone, or null for the default"),
        ControlField("sink", .nullable(.string), "its speaker, or null for the default"),
    ]
    /// A headset for one call.
    public static let examples = [
        AudioDeviceChoice(conversation: "8C1F0E4B-2A53-4C2B-9E0A-6D1F3B7A9C21", source: nil, sink: "alsa_output.usb-headset"),
        AudioDeviceChoice(conversation: "8C1F0E4B-2A53-4C2B-9E0A-6D1F3B7A9C21", source: "alsa_input.usb-headset", sink: nil),
    ]
}

extension AudioRouteChanged: ControlShape {
    /// The `audioRouteChanged` event's data.
    public static let noun = ControlNoun("an audio route change", plural: "audio route changes")
    /// The members.
    public static let fields = [
        ControlField("conversation", .nullable(.string), "the call whose chosen device went away (it plays on the default now), or null for a new default"),
        ControlField("source", .nullable(.string), "the source in use now: the call's, else the default"),
        ControlField("sink", .nullable(.string), "the sink in use now: the call's, else the default"),
        ControlField("reason", .string, "why: a new default, or the chosen microphone or speaker went away"),
    ]
    /// A headset unplugged.
    public static let examples = [
        AudioRouteChanged(conversation: nil, source: "alsa_input.pci", sink: "alsa_output.pci", reason: "the default device changed"),
        AudioRouteChanged(
            conversation: "8C1F0E4B-2A53-4C2B-9E0A-6D1F3B7A9C21", source: nil, sink: nil, reason: "the chosen speaker went away"),
    ]
}
