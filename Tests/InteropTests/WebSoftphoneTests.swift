import Foundation
import Testing

/// The web softphone parleyd serves, used in a real headless Chromium (Tests/Frontend/softphone_check.py, over the
/// DevTools protocol): one story per user story against two real parleyd on loopback. Screenshots of every step go
/// to .build/softphone-screenshots.
@Suite("Web softphone: the page in headless Chromium", .serialized)
struct WebSoftphoneTests {
    @Test("the DevTools driver itself: launch, tabs, clicks, keys, reload, screenshots, and no Chromium left behind")
    func theDriverWorks() throws {
        let workdir = FileManager.default.temporaryDirectory.appending(path: "parley-browser-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: workdir) }
        let script = Interop.packageRoot.appending(path: "Tests/Frontend/browser_selftest.py").path
        let check = try RunningProcess(
            URL(fileURLWithPath: "/usr/bin/env"), ["python3", script, "--workdir", workdir.path], name: "browser_selftest.py")
        let status = try check.waitForExit(timeout: .seconds(60))
        let output = (check.lines + [check.standardError]).joined(separator: "\n")
        #expect(status == 0, "\(output)")
        #expect(output.contains("browser self-test: ok"), "\(output)")
    }

    @Test("no token, wrong token, foreign origin; incoming, outgoing, hold, tones, mute, reload, second tab, merge, decline and Recents, failures, lifecycle buttons, background alerts, push, restart")
    func everyStoryInTheBrowser() throws {
        #expect(FileManager.default.isExecutableFile(atPath: "/usr/bin/chromium"), "Debian's chromium is missing: run Scripts/bootstrap")
        let workdir = FileManager.default.temporaryDirectory.appending(path: "parley-softphone-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: workdir) }
        let shots = Interop.packageRoot.appending(path: ".build/softphone-screenshots").path
        let script = Interop.packageRoot.appending(path: "Tests/Frontend/softphone_check.py").path
        let check = try RunningProcess(
            URL(fileURLWithPath: "/usr/bin/env"),
            [
                "python3", script, "--parleyd", try Interop.binary("parleyd").path, "--parley", try Interop.binary("parley").path,
                "--workdir", workdir.path, "--shots", shots,
            ],
            name: "softphone_check.py")
        let status = try check.waitForExit(timeout: .seconds(180))
        let output = (check.lines + [check.standardError]).joined(separator: "\n")
        #expect(status == 0, "\(output)")
        #expect(output.contains(" checks, 0 failed"), "\(output)")
        #expect(output.contains("story: parleyd restarted: ok"), "\(output)")
    }
}
