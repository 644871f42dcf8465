import Foundation

/// `{"enabled": true}` turns do-not-disturb on, `false` off; `{}` only reads it.
public struct DoNotDisturbParams: ControlParams {
    /// On, off, or absent (read only).
    public var enabled: Bool?

    /// Params.
    public init(enabled: Bool? = nil) { self.enabled = enabled }

    /// The members.
    public static let fields = [
        ControlField(
            "enabled", "a boolean", optional: true,
            "true: new incoming calls are refused with 486 Busy Here and never ring (recorded as `doNotDisturb`, unread); false: they ring again; absent: nothing changes"),
    ]
    /// An example.
    public static let example = DoNotDisturbParams(enabled: true)
}

/// The `doNotDisturb` method's result and the `doNotDisturbChanged` event's data.
public struct DoNotDisturbState: Codable, Sendable, Equatable {
    /// Whether do-not-disturb is on now.
    public var enabled: Bool

    /// A state.
    public init(enabled: Bool) { self.enabled = enabled }
}

extension DoNotDisturbState: ControlShape {
    /// Do-not-disturb's state.
    public static let noun = ControlNoun("a do-not-disturb state", plural: "do-not-disturb states")
    /// The members.
    public static let fields = [ControlField("enabled", .boolean, "whether new incoming calls are refused (486) without ringing")]
    /// On.
    public static let examples = [DoNotDisturbState(enabled: true)]
}
