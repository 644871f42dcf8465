import ControlChannel
import ControlProtocol
import Foundation
import ParleyTestSupport
import Testing

/// The parley CLI as a terminal softphone: two parleyd instances driven through their control sockets.
@Suite("Control API: the parley CLI against running parleyd", .serialized)
struct ControlCLITests {
    struct Run {
        let status: Int32
        let output: String
    }

    /// Runs `parley ARGS…` to completion.
    static func parley(_ arguments: [String]) throws -> Run {
        let process = try RunningProcess(try Interop.binary("parley"), arguments, name: "parley \(arguments.first ?? "")")
        let status = try process.waitForExit(timeout: .seconds(30))
        return Run(status: status, output: (process.lines + [process.standardError]).joined(separator: "\n"))
    }

    @Test("call, list, answer by index, hold, resume, dtmf, end — with watch seeing every change; errors exit 1 or 64")
    func softphone() throws {
        let alice = try Parleyd(["--user", "alice"])
        let bob = try Parleyd(["--user", "bob"])
        let watch = try RunningProcess(
            try Interop.binary("parley"), ["watch", "--data-dir", bob.dataDirectory.path], name: "parley watch")
        defer { watch.process.terminate() }
        try watch.waitForLine("the watch banner") { $0.contains("watching parleyd") }

        let a = ["--data-dir", alice.dataDirectory.path]
        let b = ["--data-dir", bob.dataDirectory.path]
        let call = try Self.parley(["call", "sip:bob@127.0.0.1:\(bob.port)"] + a)
        #expect(call.status == 0 && call.output.contains("ringing"), "\(call.output)")
        let list = try Self.parley(["list"] + b)
        #expect(list.status == 0 && list.output.contains("  1  ") && list.output.contains("ringing"), "\(list.output)")
        let answer = try Self.parley(["answer", "1"] + b)
        #expect(answer.status == 0 && answer.output.contains("joined"), "\(answer.output)")
        for command in [["hold", "1"], ["resume", "1"], ["dtmf", "1", "5#"], ["mute", "1"]] {
            let run = try Self.parley(command + a)
            #expect(run.status == 0, "\(command) → \(run.output)")
        }
        let paused = try Self.parley(["dtmf", "1", "9"] + a)
        #expect(paused.status == 0, "tones while joined are fine: \(paused.output)")
        let end = try Self.parley(["end", "1"] + b)
        #expect(end.status == 0, "\(end.output)")
        try bob.waitForEnded(1)
        try alice.waitForEnded(1)
        #expect(bob.transitions == [["ringing", "joining", "joined", "leaving", "left (localEnded)"]])
        #expect(alice.transitions == [["idle", "ringing", "joined", "paused", "joined", "left (remoteEnded)"]])
        try watch.waitForLine("the watch seeing the end") { $0.contains("→") && $0.contains("left") }
        #expect(watch.lines.filter { $0.contains("→") }.count == 5, "\(watch.lines)")

        let gone = try Self.parley(["end", "1"] + b)
        #expect(gone.status == 1 && gone.output.contains("no conversation #1"), "\(gone.output)")
        let bad = try Self.parley(["hold"] + b)
        #expect(bad.status == 64, "\(bad.output)")
        let notRunning = try Self.parley(["list", "--data-dir", FileManager.default.temporaryDirectory.appending(path: "nothing-here").path])
        #expect(notRunning.status == 1 && notRunning.output.contains("no parleyd is running on the data directory"), "\(notRunning.output)")
        let json = try Self.parley(["status", "--json"] + a)
        let object = try JSONSerialization.jsonObject(with: Data(json.output.split(separator: "\n").first.map(String.init)?.utf8 ?? "".utf8))
        #expect((object as? [String: Any])?["result"] != nil)
    }
}

@Suite("Control API: redial through the running parleyd", .serialized)
struct ControlRedialTests {
    @Test("parley redial ID dials a history record's party again through parleyd")
    func redial() throws {
        let bob = try Parleyd(["--auto-answer", "0", "--user", "bob"])
        let alice = try Parleyd(["--user", "alice", "--call", "sip:bob@127.0.0.1:\(bob.port)", "--script", "wait 100; end"])
        try alice.waitForEnded(1)
        let a = ["--data-dir", alice.dataDirectory.path]
        try alice.process.waitForLine("the history write") { _ in
            (try? ControlCLITests.parley(["history", "--json"] + a).output.contains("\"id\"")) == true
        }
        let redial = try ControlCLITests.parley(["redial", "1"] + a)
        #expect(redial.status == 0 && redial.output.contains("start: done"), "\(redial.output)")
        try bob.waitForEnded(1)
        #expect(bob.transitions.count == 2, "bob was called a second time")
        let dry = try ControlCLITests.parley(["redial", "1", "--dry-run"] + a)
        #expect(dry.status == 0 && dry.output.contains("would perform"), "\(dry.output)")
    }
}

@Suite("Control API: protocol over the socket", .serialized)
struct ControlSocketTests {
    @Test("concurrent clients each get their own answers; a wrong token is refused; garbage gets an error, not a hang-up")
    func concurrentClients() throws {
        let parleyd = try Parleyd()
        let directory = parleyd.dataDirectory.path
        let socket = directory + "/control.sock"
        let token = try ControlToken.read(from: directory)
        let failures = Locked<[String]>([])
        DispatchQueue.concurrentPerform(iterations: 4) { worker in
            do {
                let client = try ControlClient(socketPath: socket, token: token)
                defer { client.close() }
                for index in 0..<50 {
                    let id = worker * 1000 + index
                    try client.send(ControlRequest(id: .number(id), command: index % 2 == 0 ? .status : .list(ListParams())).encoded())
                    let reply = try JSONSerialization.jsonObject(with: try client.readLine(timeout: 10)) as? [String: Any]
                    if reply?["id"] as? Int != id || reply?["result"] == nil {
                        failures.withLock { $0.append("worker \(worker): \(String(describing: reply))") }
                    }
                }
            } catch {
                failures.withLock { $0.append("worker \(worker): \(error)") }
            }
        }
        #expect(failures.withLock { $0 }.isEmpty, "\(failures.withLock { $0 })")

        #expect(throws: ControlClientError.self) { try ControlClient(socketPath: socket, token: String(repeating: "0", count: 64)) }
        let client = try ControlClient(socketPath: socket, token: token)
        defer { client.close() }
        try client.send(Data("{not json".utf8))
        let error = try JSONSerialization.jsonObject(with: try client.readLine(timeout: 5)) as? [String: Any]
        #expect((error?["error"] as? [String: Any])?["code"] as? String == "parseError")
        try client.send(ControlRequest(id: .string("after-garbage"), command: .list(ListParams())).encoded())
        let after = try JSONSerialization.jsonObject(with: try client.readLine(timeout: 5)) as? [String: Any]
        #expect(after?["id"] as? String == "after-garbage")
    }
}

@Suite("Control API: WebSocket", .serialized)
struct ControlWebSocketTests {
    @Test("a browser-style client upgrades, says hello with the token, lists conversations; a foreign Origin is refused")
    func webSocket() throws {
        let port = Interop.freePort()
        let parleyd = try Parleyd(["--websocket", "127.0.0.1:\(port)", "--allow-origin", "http://localhost:8080"])
        let token = try ControlToken.read(from: parleyd.dataDirectory.path)
        let client = try RawWebSocket(port: port)
        let head = try #require(client.upgrade(RawWebSocket.request(["Origin: http://localhost:8080"])))
        #expect(head.first?.contains("101") == true, "\(head)")
        #expect(head.contains("Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo="), "\(head)")
        client.sendText(#"{"v":1,"type":"hello","token":"\#(token)"}"#)
        #expect(client.readText()?.contains("welcome") == true)
        client.sendText(#"{"v":1,"id":"w1","method":"list"}"#)
        let reply = try #require(client.readText())
        #expect(reply.contains(#""id":"w1""#) && reply.contains("conversations"), "\(reply)")

        let foreign = try RawWebSocket(port: port)
        let refused = try #require(foreign.upgrade(RawWebSocket.request(["Origin: http://evil.example"])))
        #expect(refused.first?.contains("403") == true, "\(refused)")
    }

    @Test("parley web prints the page's address with the token in the fragment; the page is served there; without --websocket it says how")
    func webAddress() throws {
        let port = Interop.freePort()
        let parleyd = try Parleyd(["--websocket", "127.0.0.1:\(port)"])
        let token = try ControlToken.read(from: parleyd.dataDirectory.path)
        let web = try ControlCLITests.parley(["web", "--data-dir", parleyd.dataDirectory.path])
        #expect(web.status == 0, "\(web.output)")
        #expect(web.output.trimmingCharacters(in: .whitespacesAndNewlines) == "http://127.0.0.1:\(port)/#token=\(token)")
        let json = try ControlCLITests.parley(["web", "--json", "--data-dir", parleyd.dataDirectory.path])
        #expect(json.output.contains(#""url":"http://127.0.0.1:\#(port)/#token=\#(token)""#), "\(json.output)")
        let page = try RawWebSocket(port: port)
        page.write(Array("GET / HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\n\r\n".utf8))
        let response = page.readToEOF()
        #expect(response.hasPrefix("HTTP/1.1 200 OK\r\n"), "\(response.prefix(200))")
        #expect(response.contains("<script type=\"module\" src=\"/app.js\"></script>"))
        #expect(!response.contains(token))
        // A plain GET of the page and the socket's Origin from that page: allowed without --allow-origin.
        let fromPage = try RawWebSocket(port: port)
        let head = try #require(fromPage.upgrade(RawWebSocket.request(["Host: 127.0.0.1:\(port)", "Origin: http://127.0.0.1:\(port)"])))
        #expect(head.first?.contains("101") == true, "\(head)")
        #expect(!parleyd.process.lines.joined().contains(token), "the token must not reach the log")

        // --open: the browser gets a 0600 file in the data directory, never the token on its command line.
        let fake = FileManager.default.temporaryDirectory.appending(path: "parley-xdg-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: fake, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: fake) }
        let opener = fake.appending(path: "xdg-open")
        try "#!/bin/sh\necho \"$@\" > \(fake.path)/arguments\n".write(to: opener, atomically: true, encoding: .utf8)
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: opener.path)
        let opening = try RunningProcess(
            URL(fileURLWithPath: "/usr/bin/env"),
            ["PATH=\(fake.path):/usr/bin:/bin", try Interop.binary("parley").path, "web", "--open", "--data-dir", parleyd.dataDirectory.path],
            name: "parley web --open")
        #expect(try opening.waitForExit() == 0, "\(opening.lines) \(opening.standardError)")
        let handed = try String(contentsOf: fake.appending(path: "arguments"), encoding: .utf8)
        let file = parleyd.dataDirectory.appending(path: "web-open.html")
        #expect(handed.trimmingCharacters(in: .whitespacesAndNewlines) == file.path)
        #expect(!handed.contains(token))
        let mode = try FileManager.default.attributesOfItem(atPath: file.path)[.posixPermissions] as? Int
        #expect(mode == 0o600)
        #expect(try String(contentsOf: file, encoding: .utf8).contains("url=http://127.0.0.1:\(port)/#token=\(token)"))

        let plain = try Parleyd([])
        let none = try ControlCLITests.parley(["web", "--data-dir", plain.dataDirectory.path])
        #expect(none.status == 1)
        #expect(none.output.contains("start it with --websocket 127.0.0.1:PORT"), "\(none.output)")
        #expect(try ControlCLITests.parley(["web", "--open", "--video"]).status == 64)
    }
}

@Suite("Control API: video signalling between two parleyd", .serialized)
struct ControlVideoTests {
    @Test("parley call --video: both parleyd negotiate m=video and report isVideo; without --video the callee takes audio")
    func videoCall() throws {
        let bob = try Parleyd(["--user", "bob", "--video", "--auto-answer", "0"])
        let carol = try Parleyd(["--user", "carol", "--auto-answer", "0"])
        let alice = try Parleyd(["--user", "alice", "--video"])
        let a = ["--data-dir", alice.dataDirectory.path]
        for (peer, expectVideo) in [(bob, true), (carol, false)] {
            let call = try ControlCLITests.parley(["call", "sip:x@127.0.0.1:\(peer.port)", "--video", "--json"] + a)
            #expect(call.status == 0, "\(call.output)")
            let result = try JSONSerialization.jsonObject(with: Data(call.output.split(separator: "\n")[0].utf8)) as? [String: Any]
            let uuid = try #require(((result?["result"] as? [String: Any])?["conversation"] as? [String: Any])?["uuid"] as? String)
            var listed: [String: Any]?
            for _ in 0..<100 where listed?["state"] as? String != "joined" {  // bounded: 10 s
                let list = try ControlCLITests.parley(["list", "--json"] + a)
                let object = try? JSONSerialization.jsonObject(with: Data(list.output.utf8)) as? [String: Any]
                listed = ((object?["result"] as? [String: Any])?["conversations"] as? [[String: Any]])?.first { $0["uuid"] as? String == uuid }
                if listed?["state"] as? String != "joined" { usleep(100_000) }
            }
            #expect(listed?["isVideo"] as? Bool == expectVideo, "\(String(describing: listed))")
            let remote = try ControlCLITests.parley(["list", "--json", "--data-dir", peer.dataDirectory.path])
            #expect(remote.output.contains(#""isVideo":\#(expectVideo)"#), "\(remote.output)")
            #expect(try ControlCLITests.parley(["end", uuid] + a).status == 0)
            try peer.waitForEnded(1)
        }
    }

    @Test("parley video CONV on|off upgrades an audio call to video and back, seen by both parleyd")
    func upgrade() throws {
        let bob = try Parleyd(["--user", "bob", "--video", "--auto-answer", "0"])
        let alice = try Parleyd(["--user", "alice", "--video"])
        let a = ["--data-dir", alice.dataDirectory.path]
        let b = ["--data-dir", bob.dataDirectory.path]
        #expect(try ControlCLITests.parley(["call", "sip:bob@127.0.0.1:\(bob.port)"] + a).status == 0)
        try bob.waitForTransition(to: "joined")
        for _ in 0..<100 where !(try ControlCLITests.parley(["list"] + a).output.contains("joined")) { usleep(100_000) }
        for (setting, flag) in [("on", true), ("off", false)] {
            let run = try ControlCLITests.parley(["video", "1", setting] + a)
            #expect(run.status == 0 && run.output.contains("video: done"), "\(run.output)")
            #expect(run.output.contains("video") == true)
            #expect(try ControlCLITests.parley(["list", "--json"] + a).output.contains(#""isVideo":\#(flag)"#))
            #expect(try ControlCLITests.parley(["list", "--json"] + b).output.contains(#""isVideo":\#(flag)"#))
        }
        #expect(try ControlCLITests.parley(["end", "1"] + a).status == 0)
        try bob.waitForEnded(1)
    }
}
