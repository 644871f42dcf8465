import Foundation
import Glibc
import Testing

/// parleyd on the session D-Bus (issue 49): a private bus per test (`dbus-daemon --session`), parleyd on it through
/// `DBUS_SESSION_BUS_ADDRESS`, and `gdbus` as the desktop's side — Dial, the call objects under the ObjectManager,
/// PropertiesChanged seen by `gdbus monitor`, Accept and Hangup, the errors, the introspection against
/// packaging/dbus/org.parley.Parley.xml. Every process is stopped by its PID.
@Suite("Interop: parleyd on the session D-Bus", .serialized, .timeLimit(.minutes(2)))
struct DBusServiceTests {
    static let root = "/org/parley/Parley"
    static let calls = "org.parley.Parley.Calls"
    static let call = "org.parley.Parley.Call"

    /// Starts parleyd on `bus` with `arguments` and waits until it serves org.parley.Parley.
    static func serving(_ arguments: [String], on bus: DBusSession) throws -> Parleyd {
        let parleyd = try Parleyd(["--media", "off"] + arguments, environment: bus.environment)
        try parleyd.process.waitForLine("D-Bus serving") { $0.contains("D-Bus: serving org.parley.Parley") }
        return parleyd
    }

    /// Waits until GetManagedObjects on `bus` satisfies `matches`; its last output.
    @discardableResult
    static func managedObjects(on bus: DBusSession, _ description: String, _ matches: (String) -> Bool) throws -> String {
        let deadline = ContinuousClock.now + .seconds(10)
        var last = ""
        while ContinuousClock.now < deadline {
            last = try bus.call(root, "org.freedesktop.DBus.ObjectManager.GetManagedObjects").output
            if matches(last) { return last }
            usleep(50_000)
        }
        throw InteropError("GetManagedObjects never showed \(description): \(last)")
    }

    @Test("Dial places a call bob answers; its object appears with PropertiesChanged on each state change; introspection matches the XML; Hangup ends it; then UnknownObject; malformed URIs place nothing; Recents lists it")
    func dialAndHangUp() throws {
        let bus = try DBusSession()
        let bob = try Parleyd(["--user", "bob", "--media", "off", "--auto-answer", "0", "--dbus", "off"])
        let alice = try Self.serving(["--user", "alice"], on: bus)
        let monitor = try bus.monitor()
        defer { DBusSession.stop(monitor) }
        try monitor.waitForLine("the monitor following parleyd") { $0.contains("is owned by") }

        for bad in ["'this is not an address'", "''", "'sip:bob@127.0.0.1;transport=carrier-pigeon'"] {
            let refused = try bus.call(Self.root, "\(Self.calls).Dial", [bad])
            #expect(refused.status != 0 && refused.output.contains("org.parley.Parley.Error.InvalidURI"), "\(bad): \(refused.output)")
        }
        let dialled = try bus.call(Self.root, "\(Self.calls).Dial", ["'sip:bob@127.0.0.1:\(bob.port)'"])
        #expect(dialled.status == 0 && dialled.output.contains("objectpath '/org/parley/Parley/Call/1'"), "\(dialled.output)")
        let path = "/org/parley/Parley/Call/1"
        try bob.process.waitForLine("bob answering") { _ in bob.transitions.first?.last == "joined" }
        try alice.process.waitForLine("alice joined") { _ in alice.transitions.first?.last == "joined" }
        let objects = try Self.managedObjects(on: bus, "the call, active") {
            $0.contains("'\(path)'") && $0.contains("'State': <uint32 1>") && $0.contains("'Lifecycle': <'joined'>")
        }
        #expect(objects.contains("'Inbound': <false>") && objects.contains("sip:bob@127.0.0.1:\(bob.port)"), "\(objects)")
        try monitor.waitForLine("InterfacesAdded for the call") { $0.contains("InterfacesAdded") && $0.contains(path) }
        try monitor.waitForLine("PropertiesChanged to active") {
            $0.hasPrefix("\(path): org.freedesktop.DBus.Properties.PropertiesChanged") && $0.contains("'State': <uint32 1>")
        }

        try Self.expectIntrospection(on: bus, path: Self.root, interface: Self.calls)
        try Self.expectIntrospection(on: bus, path: path, interface: Self.call)

        let hungUp = try bus.call(path, "\(Self.call).Hangup")
        #expect(hungUp.status == 0, "\(hungUp.output)")
        try alice.waitForEnded(1)
        try bob.waitForEnded(1)
        try monitor.waitForLine("InterfacesRemoved for the call") { $0.contains("InterfacesRemoved") && $0.contains(path) }
        for method in ["Hangup", "Accept", "Hold"] {
            let gone = try bus.call(path, "\(Self.call).\(method)")
            #expect(gone.status != 0 && gone.output.contains("org.freedesktop.DBus.Error.UnknownObject"), "\(method): \(gone.output)")
        }
        try Self.managedObjects(on: bus, "no call") { !$0.contains("/Call/") }
        #expect(alice.transitions.count == 1, "only the good Dial placed a call: \(alice.transitions)")
        // The ended call is in the recents (the history writes it in a moment).
        let deadline = ContinuousClock.now + .seconds(5)
        var recents = ""
        while ContinuousClock.now < deadline {
            recents = try bus.call(Self.root, "\(Self.calls).Recents", ["5"]).output
            if recents.contains("'outgoing', 'connected'") { break }
            usleep(50_000)
        }
        #expect(recents.contains("'sip:bob@127.0.0.1:\(bob.port)'") && recents.contains("'outgoing', 'connected'"), "\(recents)")
        let states = monitor.lines.filter { $0.hasPrefix(path) && $0.contains("PropertiesChanged") }
        #expect(states.contains { $0.contains("'State': <uint32 7>") }, "disconnected announced: \(states)")
    }

    @Test("an incoming call is an object in state 5; Accept answers it (the caller joins); Mute, Hold, Resume, SendDtmf act on it; Hangup ends it; SendDtmf after: UnknownObject")
    func acceptIncoming() throws {
        let bus = try DBusSession()
        let alice = try Self.serving(["--user", "alice"], on: bus)
        let bob = try Parleyd(["--user", "bob", "--media", "off", "--dbus", "off", "--call", "sip:alice@127.0.0.1:\(alice.port)"])
        let path = "/org/parley/Parley/Call/1"
        let ringing = try Self.managedObjects(on: bus, "the incoming call") { $0.contains("'State': <uint32 5>") }
        #expect(ringing.contains("'\(path)'") && ringing.contains("'Inbound': <true>") && ringing.contains("sip:bob@"), "\(ringing)")
        #expect(bob.transitions.first?.last != "joined")

        let accepted = try bus.call(path, "\(Self.call).Accept")
        #expect(accepted.status == 0, "\(accepted.output)")
        try bob.process.waitForLine("bob's call answered") { _ in bob.transitions.first?.last == "joined" }
        try Self.managedObjects(on: bus, "the call active") { $0.contains("'State': <uint32 1>") }
        let muted = try bus.call(path, "\(Self.call).Mute", ["true"])
        #expect(muted.status == 0, "\(muted.output)")
        try Self.managedObjects(on: bus, "the call muted") { $0.contains("'Muted': <true>") }
        let held = try bus.call(path, "\(Self.call).Hold")
        #expect(held.status == 0, "\(held.output)")
        try Self.managedObjects(on: bus, "the call held") { $0.contains("'State': <uint32 2>") && $0.contains("'Lifecycle': <'paused'>") }
        let resumed = try bus.call(path, "\(Self.call).Resume")
        #expect(resumed.status == 0, "\(resumed.output)")
        try Self.managedObjects(on: bus, "the call active again") { $0.contains("'State': <uint32 1>") }
        let tones = try bus.call(path, "\(Self.call).SendDtmf", ["'12#'"])
        #expect(tones.status == 0, "\(tones.output)")
        let badTones = try bus.call(path, "\(Self.call).SendDtmf", ["'x'"])
        #expect(badTones.status != 0 && badTones.output.contains("org.freedesktop.DBus.Error.InvalidArgs"), "\(badTones.output)")

        let hungUp = try bus.call(path, "\(Self.call).Hangup")
        #expect(hungUp.status == 0, "\(hungUp.output)")
        try bob.waitForEnded(1)
        let gone = try bus.call(path, "\(Self.call).SendDtmf", ["'1'"])
        #expect(gone.status != 0 && gone.output.contains("org.freedesktop.DBus.Error.UnknownObject"), "\(gone.output)")
    }

    @Test("two Dials: the first call is held for the second (call waiting); Merge joins them into one group, shown in Group on both")
    func mergeTwoCalls() throws {
        let bus = try DBusSession()
        let bob = try Parleyd(["--user", "bob", "--media", "off", "--auto-answer", "0", "--dbus", "off"])
        let carol = try Parleyd(["--user", "carol", "--media", "off", "--auto-answer", "0", "--dbus", "off"])
        let alice = try Self.serving(["--user", "alice"], on: bus)
        let first = "/org/parley/Parley/Call/1", second = "/org/parley/Parley/Call/2"
        #expect(try bus.call(Self.root, "\(Self.calls).Dial", ["'sip:bob@127.0.0.1:\(bob.port)'"]).status == 0)
        try bob.process.waitForLine("bob answering") { _ in bob.transitions.first?.last == "joined" }
        #expect(try bus.call(Self.root, "\(Self.calls).Dial", ["'sip:carol@127.0.0.1:\(carol.port)'"]).status == 0)
        try carol.process.waitForLine("carol answering") { _ in carol.transitions.first?.last == "joined" }
        try Self.managedObjects(on: bus, "the first call held, the second active") {
            $0.contains("'State': <uint32 2>") && $0.contains("'State': <uint32 1>")
        }
        let merged = try bus.call(second, "\(Self.call).Merge", ["'\(first)'"])
        #expect(merged.status == 0, "\(merged.output)")
        let objects = try Self.managedObjects(on: bus, "both calls in a group") {
            $0.components(separatedBy: "'Group': <''>").count == 1 && $0.components(separatedBy: "'Group': <'").count == 3
        }
        #expect(!objects.contains("'State': <uint32 2>"), "merged calls are active: \(objects)")
        let itself = try bus.call(first, "\(Self.call).Merge", ["'\(first)'"])
        #expect(itself.status != 0 && itself.output.contains("InvalidArgs"), "\(itself.output)")
        #expect(alice.transitions.count == 2)
    }

    @Test("a flood of Dial calls from one client is cut off with TooManyRequests; another client is still served; nothing is placed")
    func floodIsBounded() throws {
        let bus = try DBusSession()
        let alice = try Self.serving(["--user", "alice"], on: bus)
        let script = """
            import sys
            from gi.repository import Gio, GLib
            def connect():
                flags = Gio.DBusConnectionFlags.AUTHENTICATION_CLIENT | Gio.DBusConnectionFlags.MESSAGE_BUS_CONNECTION
                return Gio.DBusConnection.new_for_address_sync(sys.argv[1], flags, None, None)
            def dial(connection):
                try:
                    connection.call_sync("org.parley.Parley", "/org/parley/Parley", "org.parley.Parley.Calls", "Dial",
                        GLib.Variant("(s)", ("not an address",)), GLib.VariantType("(o)"), Gio.DBusCallFlags.NONE, 5000, None)
                    return "placed"
                except GLib.Error as error:
                    return Gio.DBusError.get_remote_error(error) or error.message
            flood = connect()
            results = [dial(flood) for _ in range(300)]
            for name in sorted(set(results)):
                print(name, results.count(name))
            print("other", dial(connect()))
            """
        let process = try RunningProcess(URL(fileURLWithPath: "/usr/bin/python3"), ["-c", script, bus.address], name: "flood")
        #expect(try process.waitForExit(timeout: .seconds(60)) == 0, "\(process.standardError)")
        let counts = Dictionary(uniqueKeysWithValues: process.lines.compactMap { line -> (String, String)? in
            let parts = line.split(separator: " ", maxSplits: 1).map(String.init)
            return parts.count == 2 ? (parts[0], parts[1]) : nil
        })
        let refused = Int(counts["org.parley.Parley.Error.TooManyRequests"] ?? "0") ?? 0
        let invalid = Int(counts["org.parley.Parley.Error.InvalidURI"] ?? "0") ?? 0
        #expect(refused >= 250 && invalid >= 5 && invalid <= 50, "\(process.lines)")
        #expect(counts["other"] == "org.parley.Parley.Error.InvalidURI", "\(process.lines)")
        #expect(counts["placed"] == nil && alice.transitions.isEmpty)
        #expect(alice.process.process.isRunning)
    }

    @Test("--dbus off exports nothing; without a session bus parleyd runs and says so once; a bus that goes away is not fatal")
    func offAbsentAndVanished() throws {
        let bus = try DBusSession()
        let off = try Parleyd(["--media", "off", "--dbus", "off"], environment: bus.environment)
        usleep(300_000)
        let owned = try bus.gdbus([
            "call", "--session", "--dest", "org.freedesktop.DBus", "--object-path", "/org/freedesktop/DBus",
            "--method", "org.freedesktop.DBus.NameHasOwner", "'org.parley.Parley'",
        ])
        #expect(owned.output.contains("(false,)"), "\(owned.output)")
        #expect(!off.process.lines.contains { $0.contains("D-Bus") }, "\(off.process.lines)")

        let absent = try Parleyd(
            ["--media", "off"], environment: ["-u", "DBUS_SESSION_BUS_ADDRESS", "XDG_RUNTIME_DIR=/nonexistent"])
        usleep(200_000)
        let said = absent.process.lines.filter { $0.contains("D-Bus") }
        #expect(said.count == 1 && said[0].contains("no session bus"), "\(said)")
        #expect(absent.process.process.isRunning)

        let on = try Self.serving([], on: bus)
        bus.stop()
        try on.process.waitForLine("the bus going away said") { $0.contains("D-Bus: the session bus went away") }
        usleep(200_000)
        #expect(on.process.process.isRunning)
        #expect(on.process.lines.filter { $0.contains("went away") }.count == 1)
        // It still takes calls.
        let caller = try Parleyd(["--user", "bob", "--media", "off", "--dbus", "off", "--call", "sip:parley@127.0.0.1:\(on.port)"])
        try on.process.waitForLine("the call after the bus went") { _ in on.transitions.first?.contains("ringing") == true }
        _ = caller
    }

    /// Checks that the introspection of `interface` at `path` has the methods, argument signatures and properties of
    /// packaging/dbus/org.parley.Parley.xml.
    static func expectIntrospection(on bus: DBusSession, path: String, interface: String) throws {
        let introspected = try bus.gdbus(["introspect", "--session", "--dest", "org.parley.Parley", "--object-path", path, "--xml"])
        #expect(introspected.status == 0, "\(introspected.output)")
        let file = Interop.packageRoot.appending(path: "packaging/dbus/org.parley.Parley.xml")
        let expected = IntrospectionShape(try String(contentsOf: file, encoding: .utf8)).members(of: interface)
        let found = IntrospectionShape(introspected.output).members(of: interface)
        #expect(!expected.isEmpty && found == expected, "\(path): missing \(expected.subtracting(found)), extra \(found.subtracting(expected))")
    }
}

/// An introspection document reduced to what must match: each method with its in and out signatures, each property
/// with its type and access, per interface.
struct IntrospectionShape {
    private var members: [String: Set<String>] = [:]

    init(_ xml: String) {
        let text = xml.replacing(#/<!--[\s\S]*?-->/#, with: "")
        var interface: String?
        var method: (name: String, inputs: String, outputs: String)?
        var found: [String: Set<String>] = [:]
        func flush() {
            if let interface, let method {
                found[interface, default: []].insert("method \(method.name)(\(method.inputs)) -> (\(method.outputs))")
            }
            method = nil
        }
        for match in text.matches(of: #/<(/?[a-z]+)([^>]*)>/#) {
            var attributes: [String: String] = [:]
            for attribute in match.2.matches(of: #/([a-z]+)="([^"]*)"/#) { attributes[String(attribute.1)] = String(attribute.2) }
            switch match.1 {
            case "interface":
                flush()
                interface = attributes["name"]
            case "/interface":
                flush()
                interface = nil
            case "method":
                flush()
                method = (attributes["name"] ?? "?", "", "")
            case "/method":
                flush()
            case "arg":
                if attributes["direction"] == "out" { method?.outputs += attributes["type"] ?? "?" } else { method?.inputs += attributes["type"] ?? "?" }
            case "property":
                flush()
                if let interface {
                    found[interface, default: []].insert(
                        "property \(attributes["name"] ?? "?") \(attributes["type"] ?? "?") \(attributes["access"] ?? "?")")
                }
            default:
                break
            }
        }
        flush()
        members = found
    }

    /// The members of `interface` (empty when the document has none).
    func members(of interface: String) -> Set<String> { members[interface] ?? [] }
}
