import Foundation
import Testing

/// The web softphone parleyd serves, used in a real headless Chromium (Tests/Frontend/softphone_check.py, over the
/// DevTools protocol): one story per user story against two real parleyd and the push simulator on loopback.
/// Screenshots of every step go to .build/softphone-screenshots.
@Suite("Web softphone: the page in headless Chromium", .serialized)
struct WebSoftphoneTests {
    @Test("the DevTools driver itself: launch, tabs, clicks, keys, reload, screenshots, and no Chromium left behind")
    func theDriverWorks() throws {
        let (status, output) = try Interop.frontendScript("browser_selftest.py", [], timeout: .seconds(60))
        #expect(status == 0, "\(output)")
        #expect(output.contains("browser self-test: ok"), "\(output)")
    }

    @Test("no token, wrong token, foreign origin; incoming, outgoing, hold, tones, mute, reload, second tab, merge, decline and Recents, failures, lifecycle buttons, background alerts, push, restart")
    func everyStoryInTheBrowser() throws {
        #expect(FileManager.default.isExecutableFile(atPath: "/usr/bin/chromium"), "Debian's chromium is missing: run Scripts/bootstrap")
        let shots = Interop.packageRoot.appending(path: ".build/softphone-screenshots").path
        let (status, output) = try Interop.frontendScript(
            "softphone_check.py",
            ["--parleyd", try Interop.binary("parleyd").path, "--parley", try Interop.binary("parley").path, "--shots", shots],
            timeout: .seconds(180))
        #expect(status == 0, "\(output)")
        #expect(output.contains(" checks, 0 failed"), "\(output)")
        #expect(output.contains("story: parleyd restarted: ok"), "\(output)")
    }
}

/// The browser as the phone (issue 45): "Use this browser for audio" in headless Chromium with a fake microphone
/// (Tests/Frontend/browser_audio_check.py): the page hears the SIP peer and the peer hears the page, through parleyd's
/// webrtcbin.
extension AudioInterop {
    @Suite("Web softphone: the call's audio in the browser", .serialized)
    struct BrowserAudioTests {
        @Test("answered from the page: 1,000 Hz to the page, the page's 440 Hz to the peer; hold silences both ways; a reload brings the audio back within 2 s; a call placed from the page carries audio both ways; a closed tab, bad offers and an answer never applied leave the SIP call going on its own audio")
        func audioInTheBrowser() throws {
            #expect(FileManager.default.isExecutableFile(atPath: "/usr/bin/chromium"), "Debian's chromium is missing: run Scripts/bootstrap")
            let (status, output) = try Interop.frontendScript(
                "browser_audio_check.py", ["--parleyd", try Interop.binary("parleyd").path], timeout: .seconds(150))
            #expect(status == 0, "\(output)")
            #expect(output.contains(" checks, 0 failed"), "\(output)")
        }
    }
}
