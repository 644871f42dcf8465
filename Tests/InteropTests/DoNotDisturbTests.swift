import Foundation
import Testing

/// Do-not-disturb (issue 46): on from the CLI, D-Bus or at start (`--dnd`), a new call is refused with 486 before it
/// rings and recorded as `doNotDisturb`, unread; off again, calls ring.
@Suite("Interop: do-not-disturb", .serialized, .timeLimit(.minutes(2)))
struct DoNotDisturbTests {
    static func parley(_ arguments: [String]) throws -> ControlCLIPolishTests.Run { try ControlCLIPolishTests.parley(arguments) }

    /// bob calls alice (refused: alice has do-not-disturb on); bob's conversation's states.
    static func call(_ alice: Parleyd) throws -> [String] {
        let bob = try Parleyd([
            "--user", "bob", "--media", "off", "--dbus", "off", "--call", "sip:alice@127.0.0.1:\(alice.port)", "--script", "wait 300; end",
        ])
        try bob.waitForEnded(1)
        return bob.transitions.first ?? []
    }

    @Test("parley dnd on: bob gets 486, alice never rings, the history has an unread doNotDisturb record; D-Bus shows it and turns it off; then calls ring")
    func onFromTheCLIOffFromDBus() throws {
        let bus = try DBusSession()
        let alice = try DBusServiceTests.serving(["--user", "alice"], on: bus)
        let data = ["--data-dir", alice.dataDirectory.path]
        let on = try Self.parley(["dnd", "on"] + data)
        #expect(on.status == 0 && on.stdout.joined().contains("do-not-disturb on"), "\(on.stdout) \(on.stderr)")
        let property = try bus.call("/org/parley/Parley", "org.freedesktop.DBus.Properties.Get", ["org.parley.Parley.Calls", "DoNotDisturb"])
        #expect(property.output.contains("<true>"), "\(property.output)")

        let refused = try Self.call(alice)
        #expect(refused.last == "left (busy)", "\(refused)")
        #expect(alice.transitions.isEmpty, "alice never rang: \(alice.transitions)")
        let listed = try Self.parley(["history", "--json"] + data)
        let history = try JSONSerialization.jsonObject(with: Data(listed.stdout.joined(separator: "\n").utf8)) as? [String: Any]
        let records = history?["records"] as? [[String: Any]] ?? []
        #expect(records.first?["status"] as? String == "doNotDisturb" && records.first?["isRead"] as? Bool == false, "\(records)")

        let off = try bus.call("/org/parley/Parley", "org.parley.Parley.Calls.SetDoNotDisturb", ["false"])
        #expect(off.status == 0, "\(off.output)")
        let said = try Self.parley(["dnd"] + data)
        #expect(said.stdout.joined().contains("do-not-disturb off"), "\(said.stdout)")
        let caller = try Parleyd(["--user", "carol", "--media", "off", "--dbus", "off", "--call", "sip:alice@127.0.0.1:\(alice.port)"])
        try alice.process.waitForLine("alice rang") { _ in alice.transitions.first?.contains("ringing") == true }
        #expect(caller.transitions.first?.last != "left (busy)", "\(caller.transitions)")
        #expect(try Self.parley(["dnd", "maybe"] + data).status == 64)
    }

    @Test("--dnd starts with it on: a call is refused, parley dnd says so")
    func onAtStart() throws {
        let alice = try Parleyd(["--user", "alice", "--media", "off", "--dbus", "off", "--dnd"])
        let said = try Self.parley(["dnd", "--data-dir", alice.dataDirectory.path])
        #expect(said.stdout.joined().contains("do-not-disturb on"), "\(said.stdout)")
        #expect(try Self.call(alice).last == "left (busy)")
        #expect(alice.transitions.isEmpty)
    }
}
