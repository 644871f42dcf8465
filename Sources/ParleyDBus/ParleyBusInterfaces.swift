import SystemdSupport

/// Parley's names on the session bus (docs/desktop.md, "D-Bus"; packaging/dbus/org.parley.Parley.xml is the same
/// interfaces as XML, and a test keeps them equal).
public enum ParleyBus {
    /// The bus name parleyd asks for.
    public static let name = "org.parley.Parley"
    /// The service's object: the Calls interface and the ObjectManager of the call objects.
    public static let rootPath = "/org/parley/Parley"
    /// Where call objects live: `/org/parley/Parley/Call/N`, N counting from 1 for each parleyd run.
    public static let callPathPrefix = "/org/parley/Parley/Call/"

    /// The errors of Parley's methods, besides the standard UnknownObject and InvalidArgs.
    public enum Error {
        /// Dial's target is not a SIP address or a number that can be called.
        public static let invalidURI = "org.parley.Parley.Error.InvalidURI"
        /// The call cannot do that now (the lifecycle refused it: not ringing, not connected…).
        public static let refused = "org.parley.Parley.Error.Refused"
        /// The action was taken but did not work (the peer refused, it timed out…).
        public static let failed = "org.parley.Parley.Error.Failed"
        /// One client called too often.
        public static let tooManyRequests = "org.parley.Parley.Error.TooManyRequests"
        /// The daemon keeps no call history.
        public static let noHistory = "org.parley.Parley.Error.NoHistory"
    }

    /// `org.parley.Parley.Calls` on the root object: placing calls, reading the recents, do-not-disturb.
    public static let calls = BusInterface(
        "org.parley.Parley.Calls",
        methods: [
            .init("Dial", inputs: [.init("uri", "s")], outputs: [.init("call", "o")]),
            .init("Recents", inputs: [.init("limit", "u")], outputs: [.init("recents", recentsSignature)]),
            .init("SetDoNotDisturb", inputs: [.init("enabled", "b")]),
        ],
        properties: [.init("DoNotDisturb", "b")])

    /// One Recents line: uuid, remote handle, name, direction, status, start (Unix seconds), how many calls the
    /// line stands for, whether any is unread.
    public static let recentsSignature = "a(sssssxub)"

    /// `org.parley.Parley.Call` on each call object: GNOME Calls' `org.gnome.Calls.Call` and LiveCommunicationKit's
    /// extras.
    public static let call = BusInterface(
        "org.parley.Parley.Call",
        methods: [
            .init("Accept"), .init("Hangup"), .init("SendDtmf", inputs: [.init("digits", "s")]), .init("Silence"),
            .init("Hold"), .init("Resume"), .init("Mute", inputs: [.init("muted", "b")]),
            .init("Merge", inputs: [.init("other", "o")]), .init("Transfer", inputs: [.init("target", "s")]),
        ],
        properties: [
            .init("State", "u"), .init("Inbound", "b"), .init("Id", "s"), .init("DisplayName", "s"),
            .init("Encrypted", "b"), .init("CanDtmf", "b"), .init("Lifecycle", "s"), .init("Muted", "b"),
            .init("Group", "s"), .init("ActiveRemoteMembers", "as"), .init("Uuid", "s"),
        ])
}
