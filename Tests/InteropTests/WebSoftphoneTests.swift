import Foundation
import ParleyTestSupport
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

        @Test("a page off localhost: over HTTPS and WSS (--websocket-tls) at https://phone.test it is a secure context and carries the call's audio both ways, hold and reload included, with a relay candidate from parleyd's TURN server; plain HTTP there has no microphone; the listener serves only the certificate's names")
        func audioOverTLS() throws {
            #expect(FileManager.default.isExecutableFile(atPath: "/usr/bin/chromium"), "Debian's chromium is missing: run Scripts/bootstrap")
            let (status, output) = try Interop.frontendScript(
                "browser_audio_tls_check.py", ["--parleyd", try Interop.binary("parleyd").path], timeout: .seconds(180))
            #expect(status == 0, "\(output)")
            #expect(output.contains(" checks, 0 failed"), "\(output)")
        }
    }
}

/// `--websocket-tls CERT KEY`: what parleyd says of a listener it cannot serve.
@Suite("parleyd: the WebSocket listener's options")
struct WebSocketOptionTests {
    @Test("TLS without --websocket, one value, a non-loopback address without TLS, a missing key: each said, nothing served")
    func refusals() throws {
        let files = try TLSCertificateFiles.make(subjectAltName: "DNS:phone.test")
        let cases: [([String], Int32, String)] = [
            (["--websocket-tls", files.certificate, files.key], 64, "--websocket-tls goes with --websocket HOST:PORT"),
            (["--websocket", "127.0.0.1:0", "--websocket-tls", files.certificate], 64, "--websocket-tls needs two values"),
            (["--websocket", "192.0.2.1:0"], 1, "without TLS the control API listens on 127.0.0.1, ::1 or localhost only"),
            (["--websocket", "127.0.0.1:0", "--websocket-tls", files.certificate, files.key + ".gone"], 1, files.key + ".gone"),
        ]
        for (arguments, code, message) in cases {
            let data = FileManager.default.temporaryDirectory.appending(path: "parley-ws-\(UUID().uuidString)").path
            let refused = try RunningProcess(
                try Interop.binary("parleyd"), ["--no-history", "--dbus", "off", "--data-dir", data, "--listen", "udp://127.0.0.1:0"] + arguments,
                name: "parleyd websocket options")
            #expect(try refused.waitForExit() == code, "\(arguments): \(refused.standardError)")
            #expect(refused.standardError.contains(message), "\(arguments): \(refused.standardError)")
        }
    }
}
