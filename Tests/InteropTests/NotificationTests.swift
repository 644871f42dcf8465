import ControlProtocol
import Foundation
import Glibc
import ParleyTestSupport
import Testing

/// The test's notification server (Tests/Interop/desktop/notification-server.py) on a private bus: it records each
/// Notify and CloseNotification and plays the user (`Invoke`: ActionInvoked, as a click on a button). Stopped by its
/// PID.
final class NotificationServer {
    static let script = Interop.packageRoot.appending(path: "Tests/Interop/desktop/notification-server.py")
    let process: RunningProcess
    let bus: DBusSession

    /// One Notify the server received.
    struct Notice {
        let id: UInt32
        let fields: [String: Any]
        var hints: [String: Any] { fields["hints"] as? [String: Any] ?? [:] }
        var category: String { hints["category"] as? String ?? "" }
        var body: String { fields["body"] as? String ?? "" }
        var actions: [String] { fields["actions"] as? [String] ?? [] }
    }

    /// Starts the server on `bus`, answering Notify at once, after a delay (`slow=SECONDS`) or never (`never`).
    init(on bus: DBusSession, mode: String = "normal") throws {
        self.bus = bus
        process = try RunningProcess(URL(fileURLWithPath: "/usr/bin/python3"), [Self.script.path, bus.address, mode], name: "notifications")
        _ = try process.waitForLine("the server's name") { $0 == "READY" }
    }

    /// Every Notify so far.
    var notices: [Notice] {
        process.lines.compactMap { line in
            let parts = line.split(separator: " ", maxSplits: 2).map(String.init)
            guard parts.count == 3, parts[0] == "NOTIFY", let id = UInt32(parts[1]),
                let fields = try? JSONSerialization.jsonObject(with: Data(parts[2].utf8)) as? [String: Any]
            else { return nil }
            return Notice(id: id, fields: fields)
        }
    }

    /// Waits for a Notify of `category`.
    func waitForNotice(_ category: String, timeout: Duration = .seconds(10)) throws -> Notice {
        _ = try process.waitForLine(timeout: timeout, "a \(category) notification") { _ in notices.contains { $0.category == category } }
        return notices.first { $0.category == category }!
    }

    /// Waits until notification `id` is withdrawn (CloseNotification).
    func waitForClose(_ id: UInt32, timeout: Duration = .seconds(10)) throws {
        _ = try process.waitForLine(timeout: timeout, "notification \(id) withdrawn") { $0 == "CLOSE \(id)" }
    }

    /// Clicks `key` (accept, decline, callback) on notification `id`.
    func invoke(_ id: UInt32, _ key: String) throws {
        let clicked = try bus.gdbus([
            "call", "--session", "--dest", "org.freedesktop.Notifications", "--object-path", "/org/freedesktop/Notifications",
            "--method", "org.parley.Test.Notifications.Invoke", "\(id)", "'\(key)'",
        ])
        #expect(clicked.status == 0, "\(clicked.output)")
    }

    deinit { _ = try? process.stop() }
}

/// Notifications of calls on a desktop (issue 49): a private session bus, the test's notification server on it, and
/// parleyd — Answer, Decline and Call back clicked on the notifications act on the calls; a server that is absent or
/// never answers leaves calls ringing and answerable.
extension AudioInterop {
    @Suite("Interop: call notifications on the session bus", .serialized, .timeLimit(.minutes(2)))
    struct NotificationTests {
        /// alice with the D-Bus service on `bus`, playing 1,000 Hz and recording into a folder of her own.
        static func alice(on bus: DBusSession, _ arguments: [String] = []) throws -> (Parleyd, URL) {
            let folder = FileManager.default.temporaryDirectory.appending(path: "parley-notify-\(UUID().uuidString)")
            let parleyd = try Parleyd(
                ["--user", "alice", "--media", "gstreamer", "--audio-source", "tone:1000", "--audio-sink", "file:\(folder.path)"] + arguments,
                environment: bus.environment)
            try parleyd.process.waitForLine("D-Bus serving") { $0.contains("D-Bus: serving org.parley.Parley") }
            return (parleyd, folder)
        }

        @Test("an INVITE raises call.incoming (critical, resident, the caller's name, Answer/Decline); Answer answers it — bob hears alice's 1,000 Hz — and withdraws it")
        func answer() throws {
            let bus = try DBusSession()
            let server = try NotificationServer(on: bus)
            let (alice, aliceFolder) = try Self.alice(on: bus)
            let (bob, bobFolder) = try AudioInteropTests.parleyd(
                tone: 440, ["--user", "bob", "--dbus", "off", "--call", "sip:alice@127.0.0.1:\(alice.port)", "--script", "wait 3000; end"])
            defer { for folder in [aliceFolder, bobFolder] { try? FileManager.default.removeItem(at: folder) } }
            let notice = try server.waitForNotice("call.incoming")
            #expect(notice.hints["urgency"] as? Int == 2 && notice.hints["resident"] as? Bool == true, "\(notice.fields)")
            #expect(notice.body.contains("sip:bob@127.0.0.1"), "\(notice.body)")
            #expect(notice.actions == ["accept", "Answer", "decline", "Decline"])
            #expect(bob.transitions.first?.contains("joined") != true)

            try server.invoke(notice.id, "accept")
            try server.waitForClose(notice.id)
            try bob.waitForEnded(1)
            #expect(bob.transitions.first?.contains("joined") == true, "\(bob.transitions)")
            let heard = try AudioInteropTests.recording(in: bobFolder, of: bob)
            let level = heard.part(from: 0.5, to: heard.duration - 0.3).level(at: 1_000)
            print("notifications: bob heard alice at \(level) dB after Answer on the notification")
            #expect(level > -15)
            try alice.waitForEnded(1)
            #expect(!server.notices.contains { $0.category == "call.unanswered" }, "an answered call is not missed")
        }

        @Test("Decline on the notification refuses the call (486 Busy Here, parleyd's default decline): bob's call ends busy; no missed-call notice follows")
        func decline() throws {
            let bus = try DBusSession()
            let server = try NotificationServer(on: bus)
            let alice = try DBusServiceTests.serving(["--user", "alice"], on: bus)
            let bob = try Parleyd(["--user", "bob", "--media", "off", "--dbus", "off", "--call", "sip:alice@127.0.0.1:\(alice.port)"])
            let notice = try server.waitForNotice("call.incoming")
            try server.invoke(notice.id, "decline")
            try bob.waitForEnded(1)
            #expect(bob.transitions.first?.last == "left (busy)", "\(bob.transitions)")
            try server.waitForClose(notice.id)
            try alice.waitForEnded(1)
            usleep(300_000)
            #expect(!server.notices.contains { $0.category == "call.unanswered" })
        }

        @Test("a call the caller gives up on is withdrawn and leaves call.unanswered; its Call back dials the caller")
        func missedCallBack() throws {
            let bus = try DBusSession()
            let server = try NotificationServer(on: bus)
            let alice = try DBusServiceTests.serving(["--user", "alice"], on: bus)
            let bob = try Parleyd(["--user", "bob", "--media", "off", "--dbus", "off"])
            let bobsPhone = try GroupControl(bob)
            let call = try bobsPhone.call("sip:alice@127.0.0.1:\(alice.port)")
            let incoming = try server.waitForNotice("call.incoming")
            _ = try bobsPhone.result(.end(ConversationParams(conversation: call)))
            try server.waitForClose(incoming.id)
            let missed = try server.waitForNotice("call.unanswered")
            #expect(missed.actions == ["callback", "Call back"] && missed.body.contains("sip:bob@127.0.0.1:\(bob.port)"), "\(missed.fields)")
            try alice.waitForEnded(1)

            try server.invoke(missed.id, "callback")
            try bob.process.waitForLine("alice calling back") { _ in bob.transitions.count == 2 && bob.transitions[1].contains("ringing") }
            try alice.process.waitForLine("alice's call back") { $0.contains("notifications: Call back") }
            #expect(alice.transitions.count == 2)
        }

        @Test("no notification server: said once, calls ring and are answered over D-Bus; a server that never answers Notify holds nothing up")
        func absentOrSilentServer() throws {
            let bus = try DBusSession()
            let alice = try DBusServiceTests.serving(["--user", "alice"], on: bus)
            var callers: [Parleyd] = []
            for _ in 0..<2 {
                callers.append(try Parleyd(["--user", "bob", "--media", "off", "--dbus", "off", "--call", "sip:alice@127.0.0.1:\(alice.port)"]))
            }
            try alice.process.waitForLine("the two calls ringing") { _ in alice.transitions.filter { $0.last == "ringing" }.count == 2 }
            usleep(500_000)
            let said = alice.process.lines.filter { $0.contains("no notification server") }
            #expect(said.count == 1, "\(said)")

            let silent = try NotificationServer(on: bus, mode: "never")
            let caller = try Parleyd(["--user", "carol", "--media", "off", "--dbus", "off", "--call", "sip:alice@127.0.0.1:\(alice.port)"])
            _ = try silent.waitForNotice("call.incoming")
            let answered = try bus.call("/org/parley/Parley/Call/3", "org.parley.Parley.Call.Accept")
            #expect(answered.status == 0, "\(answered.output)")
            try caller.process.waitForLine("carol's call answered while the server keeps Notify unanswered") { _ in
                caller.transitions.first?.contains("joined") == true
            }
            _ = callers
        }
    }
}
