import ControlChannel
import ControlProtocol
import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Collaborations on the web softphone's call cards (docs/web-softphone.md), in a real headless Chromium against
/// two real parleyd on loopback: Bob's parleyd serves the page, Alice's is driven over its control socket.
extension WebSoftphoneTests {
    static func card(_ uuid: String) -> String { "[data-call][data-uuid=\"\(uuid)\"]" }
    static func js(_ text: String) -> String {
        String(decoding: try! JSONSerialization.data(withJSONObject: [text], options: [.withoutEscapingSlashes]), as: UTF8.self)
            .dropFirst().dropLast().description
    }

    @Test("collaborations: the share banner, Open → granted, notices and a mention, Share document with Accept, escaping, an error toast", .timeLimit(.minutes(1)))
    func collaborationsOnTheCallCard() throws {
        #expect(FileManager.default.isExecutableFile(atPath: "/usr/bin/chromium"), "Debian's chromium is missing: run Scripts/bootstrap")
        let web = Interop.freePort()
        let alice = try Parleyd(["--user", "alice", "--display-name", "Alice", "--media", "off"])
        let bob = try Parleyd(["--user", "bob", "--display-name", "Bob", "--media", "off", "--auto-answer", "0",
                               "--websocket", "127.0.0.1:\(web)"])
        let owner = try GroupControl(alice), toBob = try GroupControl(bob)
        let aliceRoot = try #require(try owner.result(.identity)["root"] as? String)
        let bobRoot = try #require(try toBob.result(.identity)["root"] as? String)
        let token = try ControlToken.read(from: bob.dataDirectory.path)
        let shots = Interop.packageRoot.appending(path: ".build/softphone-collaboration-screenshots")
        try? FileManager.default.removeItem(at: shots)
        try FileManager.default.createDirectory(at: shots, withIntermediateDirectories: true)
        let browser = try HeadlessChromium(screenshots: shots)
        defer { browser.close() }
        try browser.open("http://127.0.0.1:\(web)/#token=\(token)")
        try browser.waitFor("document.querySelector('[data-connection]').dataset.state === 'connected'", "the page to connect")

        // Alice calls Bob; Bob's page shows the connected card with its Share document control.
        let call = try owner.call("sip:bob@127.0.0.1:\(bob.port)")
        try owner.waitForJoined([call])
        let uuid = try #require(try browser.waitFor(
            "document.querySelector('[data-call][data-state=\"joined\"]')?.dataset.uuid", "Bob's card to show the call joined") as? String)
        let card = Self.card(uuid)
        try browser.waitFor("!!document.querySelector(\(Self.js(card + " [data-collab-share] [data-collab-start]")))", "the Share document control")

        // Alice shares "Trip plan": the banner on Bob's card says so, with its link, its state and Open.
        let started = try owner.result(.collaborationStart(CollaborationStartParams(
            conversation: call, title: "Trip plan", url: "https://docs.example.org/d/42")))
        let id = try #require(started["collaboration"] as? String)
        let banner = "\(card) [data-collab=\"\(id)\"]"
        try browser.waitFor("!!document.querySelector(\(Self.js(banner)))", "the share banner on the call card")
        #expect(try browser.evaluate("document.querySelector(\(Self.js(banner + " [data-collab-name]"))).textContent") as? String == "Trip plan")
        #expect(try browser.evaluate("document.querySelector(\(Self.js(banner + " [data-collab-url]"))).textContent") as? String
            == "https://docs.example.org/d/42")
        #expect(try browser.evaluate("document.querySelector(\(Self.js(banner))).dataset.collabState") as? String == "active")
        #expect(try browser.evaluate("document.querySelector(\(Self.js(banner))).dataset.owner") as? String == "false")
        #expect(try browser.evaluate("document.querySelector(\(Self.js(banner + " [data-collab-access]"))).textContent") as? String
            == "Access: not opened")
        try browser.screenshot("shared")

        // Once Alice has stored Bob's root (invited), Open proves Bob's device and the banner says granted.
        try owner.waitForAccess(of: bobRoot, in: id, "invited")
        try browser.click("\(banner) [data-collab-open=\"\(id)\"]")
        try browser.waitFor("document.querySelector(\(Self.js(banner)))?.dataset.access === 'granted'", "access granted on the banner")
        #expect(try browser.evaluate("document.querySelector(\(Self.js(banner + " [data-collab-access]"))).textContent") as? String
            == "Access: granted")
        #expect(try browser.evaluate("!document.querySelector(\(Self.js(banner + " [data-collab-open]")))") as? Bool == true)
        _ = try owner.nextEvent("collaborationVerified") { $0["granted"] as? Bool == true }
        try owner.waitForAccess(of: bobRoot, in: id, "granted")
        try browser.screenshot("granted")

        // Granting posted a membership notice; then Alice edits, mentions Bob and renames it: four lines, in order.
        _ = try owner.result(.collaborationNotice(CollaborationNoticeParams(collaboration: id, kind: "change", trigger: "edit")))
        _ = try owner.result(.collaborationNotice(CollaborationNoticeParams(collaboration: id, kind: "mention", person: bobRoot)))
        _ = try owner.result(.collaborationNotice(CollaborationNoticeParams(collaboration: id, kind: "persistence", trigger: "renamed")))
        let notices = "[...document.querySelectorAll(\(Self.js(banner + " [data-collab-notices] li")))].map(li => li.textContent)"
        try browser.waitFor("\(notices).length >= 4", "four notices on the card")
        let lines = try browser.evaluate(notices) as? [String] ?? []
        #expect(lines == ["Alice added a collaborator to 'Trip plan'", "Alice edited 'Trip plan'", "Alice mentioned you in 'Trip plan'",
                          "Alice renamed 'Trip plan'"], "\(lines)")
        // The session it rides, joined by parleyd on its own, is the card's joined group panel (not an offer).
        #expect(try browser.evaluate("document.querySelector(\(Self.js(card + " [data-group]"))).dataset.groupState") as? String == "joined")
        try browser.screenshot("notices")

        // A reload lists it again from parleyd (the notices were this tab's).
        _ = try browser.send("Page.reload")
        try browser.waitFor("document.querySelector(\(Self.js(banner)))?.dataset.access === 'granted'", "the banner after a reload")

        // Bob shares a document from the page, asking before adding people; its title is markup, shown as text.
        let hostile = "<img src=x onerror=\"window.pwned=1\">Budget"
        try browser.fill("\(card) [data-collab-title]", hostile)
        try browser.click("\(card) [data-collab-confirm]")
        try browser.click("\(card) [data-collab-start]")
        let shared = try owner.nextEvent("collaborationChanged") {
            ($0["collaboration"] as? [String: Any])?["isOwner"] as? Bool == false
                && ($0["collaboration"] as? [String: Any])?["title"] as? String == hostile
        }
        let mine = try #require((shared["collaboration"] as? [String: Any])?["collaboration"] as? String)
        let ours = "\(card) [data-collab=\"\(mine)\"]"
        try browser.waitFor("document.querySelector(\(Self.js(ours)))?.dataset.owner === 'true'", "Bob's own banner")
        #expect(try browser.evaluate("document.querySelector(\(Self.js(ours + " [data-collab-name]"))).textContent") as? String == hostile)
        #expect(try browser.evaluate("document.querySelectorAll('[data-calls] img').length") as? Int == 0)
        #expect(try browser.evaluate("window.pwned === undefined") as? Bool == true)
        #expect(try browser.evaluate("document.querySelector(\(Self.js(card + " [data-collab-title]"))).value") as? String == "")

        // Alice's root waits for Bob's Accept; then Alice is invited, and granted once she opens it.
        let update = try browser.waitFor("document.querySelector(\(Self.js(ours + " [data-collab-update]")))?.textContent",
                                         "a participants update to confirm") as? String ?? ""
        #expect(update.lowercased().contains("add alice"), "\(update)")
        try browser.screenshot("confirm")
        try browser.click("\(ours) [data-collab-accept]")
        let alicesLine = "\(ours) [data-collab-people] li[data-person=\"\(aliceRoot)\"]"
        try browser.waitFor("document.querySelector(\(Self.js(alicesLine)))?.dataset.access === 'invited'", "Alice invited")
        #expect(try browser.evaluate("!document.querySelector(\(Self.js(ours + " [data-collab-update]")))") as? Bool == true)
        #expect((try browser.evaluate("document.querySelector(\(Self.js(alicesLine))).textContent") as? String)?.hasSuffix("— invited") == true)
        _ = try owner.result(.collaborationOpen(CollaborationParams(collaboration: mine)))
        try browser.waitFor("document.querySelector(\(Self.js(alicesLine)))?.dataset.access === 'granted'", "Alice granted")

        // A refusal is a toast with parleyd's sentence.
        try browser.fill("\(card) [data-collab-title]", String(repeating: "é", count: 300))
        try browser.click("\(card) [data-collab-start]")
        let toast = try browser.waitFor(
            "[...document.querySelectorAll('[data-toast=\"error\"]')].map(t => t.textContent).find(t => t.includes('500 bytes'))",
            "an error toast for a title over 500 bytes") as? String
        #expect(toast == "Title is longer than 500 bytes.", "\(toast ?? "")")
        try browser.screenshot("error")
        #expect(browser.errors.isEmpty, "\(browser.errors)")
    }
}

extension GroupControl {
    /// Waits until the owner's `collaborations` says `root` has `access` in collaboration `id`.
    func waitForAccess(of root: String, in id: String, _ access: String, timeout: TimeInterval = 10) throws {
        let deadline = Date().addingTimeInterval(timeout)
        while true {
            let list = try result(.collaborations)["collaborations"] as? [[String: Any]] ?? []
            let people = list.first { $0["collaboration"] as? String == id }?["participants"] as? [[String: Any]] ?? []
            if people.first(where: { $0["root"] as? String == root })?["access"] as? String == access { return }
            guard Date() < deadline else { throw InteropError("\(root.prefix(8)) not \(access) in \(id): \(list)") }
            usleep(50_000)
        }
    }
}

/// Debian's headless Chromium driven over the DevTools protocol on a pipe (`--remote-debugging-pipe`: commands in
/// on fd 3, answers and events out on fd 4, NUL-terminated JSON), in its own process group with a throw-away
/// profile; `close()` kills the group. One tab, attached with a flat session.
final class HeadlessChromium: @unchecked Sendable {
    // @unchecked Sendable: the pipe's write end and the counters are used from the test's thread only; what the
    // reader thread collects sits behind Locked.
    private let pid: pid_t
    private let commands: Int32
    private let profile: URL
    private let screenshots: URL
    private let replies = Locked<[Int: Data]>([:])
    private let console = Locked<[String]>([])
    private var nextID = 0
    private var session: String?
    private var shots = 0
    private var closed = false

    /// The page's uncaught exceptions and console errors so far.
    var errors: [String] { console.withLock { $0 } }

    init(screenshots: URL) throws {
        self.screenshots = screenshots
        profile = FileManager.default.temporaryDirectory.appending(path: "chromium-profile-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: profile, withIntermediateDirectories: true)
        // Both pipes moved to descriptors ≥ 10 (close-on-exec), so the child's dup2 onto 3 and 4 cannot clobber them.
        func pipePair() throws -> (read: Int32, write: Int32) {
            var fds: [Int32] = [0, 0]
            guard pipe(&fds) == 0 else { throw InteropError("pipe: \(errno)") }
            let high = fds.map { fcntl($0, F_DUPFD_CLOEXEC, 10) }
            fds.forEach { _ = Glibc.close($0) }
            return (high[0], high[1])
        }
        let input = try pipePair(), output = try pipePair()
        let log = screenshots.appending(path: "chromium.log").path
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, log, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        posix_spawn_file_actions_adddup2(&actions, input.read, 3)
        posix_spawn_file_actions_adddup2(&actions, output.write, 4)
        // Nothing else of this process leaks into Chromium (glibc ≥ 2.34; Swift does not see the _np declaration).
        if let closeFrom = dlsym(nil, "posix_spawn_file_actions_addclosefrom_np") {
            typealias CloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32
            _ = unsafeBitCast(closeFrom, to: CloseFrom.self)(&actions, 5)
        }
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETPGROUP))
        posix_spawnattr_setpgroup(&attributes, 0)
        let arguments = ["/usr/bin/chromium", "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-breakpad",
                         "--disable-dev-shm-usage", "--no-first-run", "--no-default-browser-check", "--disable-extensions",
                         "--disable-background-networking", "--disable-component-update", "--mute-audio",
                         "--window-size=1280,900", "--remote-debugging-pipe", "--user-data-dir=\(profile.path)", "about:blank"]
        var argv = arguments.map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var child: pid_t = 0
        let status = posix_spawn(&child, arguments[0], &actions, &attributes, &argv, environ)
        _ = Glibc.close(input.read)
        _ = Glibc.close(output.write)
        guard status == 0 else {
            _ = Glibc.close(input.write)
            _ = Glibc.close(output.read)
            throw InteropError("cannot start chromium: \(status)")
        }
        pid = child
        commands = input.write
        Self.read(output.read, replies: replies, console: console)
        do {
            let target = try send("Target.createTarget", ["url": "about:blank", "newWindow": true], timeout: 20)
            let attached = try send("Target.attachToTarget", ["targetId": target["targetId"] ?? "", "flatten": true])
            session = attached["sessionId"] as? String
            _ = try send("Runtime.enable")
        } catch {
            close()
            throw error
        }
    }

    /// Reads fd 4's messages on a thread of their own until end of file: answers by id, errors of the page.
    private static func read(_ fd: Int32, replies: Locked<[Int: Data]>, console: Locked<[String]>) {
        Thread.detachNewThread {
            var pending: [UInt8] = []
            var buffer = [UInt8](repeating: 0, count: 1 << 16)
            while true {
                let count = Glibc.read(fd, &buffer, buffer.count)
                if count < 0 && errno == EINTR { continue }
                guard count > 0 else { break }
                pending += buffer[..<count]
                while let end = pending.firstIndex(of: 0) {
                    let message = Data(pending[..<end])
                    pending.removeSubrange(...end)
                    guard let object = try? JSONSerialization.jsonObject(with: message) as? [String: Any] else { continue }
                    if let id = object["id"] as? Int {
                        replies.withLock { $0[id] = message }
                    } else if let line = Self.problem(object) {
                        console.withLock { $0.append(line) }
                    }
                }
            }
            _ = Glibc.close(fd)
        }
    }

    /// An uncaught exception or a console error, in a line.
    private static func problem(_ event: [String: Any]) -> String? {
        let params = event["params"] as? [String: Any] ?? [:]
        switch event["method"] as? String {
        case "Runtime.exceptionThrown":
            let details = params["exceptionDetails"] as? [String: Any] ?? [:]
            return "exception: \((details["exception"] as? [String: Any])?["description"] ?? details["text"] ?? "?")"
        case "Runtime.consoleAPICalled" where params["type"] as? String == "error":
            let args = (params["args"] as? [[String: Any]] ?? []).map { "\($0["value"] ?? $0["description"] ?? "?")" }
            return "console error: \(args.joined(separator: " "))"
        default:
            return nil
        }
    }

    /// Runs a DevTools command (in the tab once attached) and returns its result; throws on an error or no answer.
    @discardableResult
    func send(_ method: String, _ params: [String: Any] = [:], timeout: TimeInterval = 10) throws -> [String: Any] {
        nextID += 1
        let id = nextID
        var message: [String: Any] = ["id": id, "method": method, "params": params]
        if let session, !method.hasPrefix("Target.") { message["sessionId"] = session }
        var bytes = [UInt8](try JSONSerialization.data(withJSONObject: message)) + [0]
        var sent = 0
        while sent < bytes.count {
            let count = bytes.withUnsafeMutableBytes { write(commands, $0.baseAddress! + sent, $0.count - sent) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { throw InteropError("\(method): the DevTools pipe is closed (\(errno))") }
            sent += count
        }
        let deadline = Date().addingTimeInterval(timeout)
        while true {
            if let data = replies.withLock({ $0.removeValue(forKey: id) }) {
                let reply = try JSONSerialization.jsonObject(with: data) as? [String: Any] ?? [:]
                if let error = reply["error"] { throw InteropError("\(method) failed: \(error)") }
                return reply["result"] as? [String: Any] ?? [:]
            }
            guard Date() < deadline else { throw InteropError("\(method): no answer within \(timeout) s") }
            usleep(5_000)
        }
    }

    /// Loads `url` in the tab.
    func open(_ url: String) throws {
        let result = try send("Page.navigate", ["url": url])
        if let problem = result["errorText"] as? String { throw InteropError("navigating to \(url): \(problem)") }
    }

    /// The value of a JavaScript expression in the page (promises awaited); throws what the page threw.
    func evaluate(_ expression: String) throws -> Any? {
        let result = try send("Runtime.evaluate", ["expression": expression, "returnByValue": true, "awaitPromise": true])
        if let details = result["exceptionDetails"] as? [String: Any] {
            throw InteropError("\((details["exception"] as? [String: Any])?["description"] ?? details["text"] ?? "the page threw")")
        }
        let value = (result["result"] as? [String: Any])?["value"]
        return value is NSNull ? nil : value
    }

    /// Polls `expression` every 50 ms until it is truthy and returns its value; on timeout a screenshot, the page's
    /// toasts and errors go into the thrown error.
    @discardableResult
    func waitFor(_ expression: String, _ what: String, timeout: TimeInterval = 10) throws -> Any {
        let deadline = Date().addingTimeInterval(timeout)
        var last: Any? = nil
        while true {
            do {
                last = try evaluate(expression)
                if let value = last, Self.truthy(value) { return value }
            } catch {
                last = error
            }
            if Date() >= deadline { break }
            usleep(50_000)
        }
        let shot = (try? screenshot("timeout")) ?? "none"
        let toasts = (try? evaluate("[...document.querySelectorAll('[data-toast]')].map(t => t.textContent)")) ?? []
        throw InteropError("timed out after \(timeout) s waiting for \(what); last value \(String(describing: last)); "
            + "toasts \(toasts), page errors \(errors), screenshot \(shot)")
    }

    private static func truthy(_ value: Any) -> Bool {
        switch value {
        case let flag as Bool: flag
        case let text as String: !text.isEmpty
        case let number as NSNumber: number.doubleValue != 0
        default: true
        }
    }

    private func element(_ selector: String, _ action: String, _ body: String) -> String {
        let quoted = WebSoftphoneTests.js(selector)
        return """
            (() => { const sel = \(quoted), el = document.querySelector(sel);
              if (!el) throw new Error('\(action): no element matches ' + sel);
              if (!el.getClientRects().length) throw new Error('\(action): ' + sel + ' is hidden');
              if (el.matches(':disabled')) throw new Error('\(action): ' + sel + ' is disabled');
              \(body) return true; })()
            """
    }

    /// Clicks the element `selector` matches (it must be there, shown and enabled).
    func click(_ selector: String) throws {
        _ = try evaluate(element(selector, "click", "el.scrollIntoView({block: 'center'}); el.click();"))
    }

    /// Types `text` into the field `selector` matches: its value, then `input` and `change`.
    func fill(_ selector: String, _ text: String) throws {
        _ = try evaluate(element(selector, "fill", """
            el.focus(); el.value = \(WebSoftphoneTests.js(text));
            el.dispatchEvent(new Event('input', {bubbles: true})); el.dispatchEvent(new Event('change', {bubbles: true}));
            """))
    }

    /// Saves a PNG of the page as NN-name.png in the screenshot folder; its path.
    @discardableResult
    func screenshot(_ name: String) throws -> String {
        shots += 1
        let result = try send("Page.captureScreenshot", ["format": "png"], timeout: 20)
        guard let data = Data(base64Encoded: result["data"] as? String ?? "") else { throw InteropError("no screenshot data") }
        let path = screenshots.appending(path: String(format: "%02d-%@.png", shots, name))
        try data.write(to: path)
        return path.path
    }

    /// Ends Chromium's whole process group (SIGTERM, SIGKILL after 3 s), reaps it and removes the profile; once.
    func close() {
        guard !closed else { return }
        closed = true
        _ = Glibc.close(commands)
        kill(-pid, SIGTERM)
        var status: Int32 = 0
        var reaped = false
        let soft = Date().addingTimeInterval(3)
        while Date() < soft, !reaped {
            reaped = waitpid(pid, &status, WNOHANG) == pid
            if !reaped { usleep(20_000) }
        }
        kill(-pid, SIGKILL)
        if !reaped { _ = waitpid(pid, &status, 0) }
        // The helpers (zygote, renderers) are reparented once the main process has gone: wait until the group is empty.
        let hard = Date().addingTimeInterval(5)
        while Date() < hard, kill(-pid, 0) == 0 { usleep(20_000) }
        try? FileManager.default.removeItem(at: profile)
    }

    deinit { close() }
}
