import ControlChannel
import ControlProtocol
import Foundation
import GroupActivities
import ParleyTestSupport
import Testing

/// Group sessions between real parleyd on loopback, through their control sockets: one hosts a merged call, the
/// others join what they are offered, and messages go out and come in as the frontends see them.
@Suite("Group sessions: parleyd hosting a merged call, over real sockets", .serialized)
struct GroupInteropTests {
    /// How many messages each member sends through the lossy relay (PARLEY_GROUP_MESSAGES for a longer run; the
    /// in-memory engine test sends 1,000 each at the same fault rate).
    static let messagesEach = ProcessInfo.processInfo.environment["PARLEY_GROUP_MESSAGES"].flatMap(Int.init) ?? 150

    @Test("three parleyd, one leg through a relay that drops, duplicates and reorders 10 %: every member sees one order, no loss, no duplicate")
    func orderedThroughALossyRelay() throws {
        let alice = try Parleyd(["--user", "alice", "--display-name", "Alice", "--media", "off"])
        let bob = try Parleyd(["--user", "bob", "--display-name", "Bob", "--media", "off", "--auto-answer", "0"])
        let carol = try Parleyd(["--user", "carol", "--display-name", "Carol", "--media", "off", "--auto-answer", "0"])
        let relay = try LossyRelay(between: alice.port, and: bob.port, faultRate: 0.10, seed: 20_261_202)
        defer { relay.stop() }
        let host = try GroupControl(alice), toBob = try GroupControl(bob), toCarol = try GroupControl(carol)

        let bobsCall = try host.call("sip:bob@127.0.0.1:\(relay.nearPort)")
        let carolsCall = try host.call("sip:carol@127.0.0.1:\(carol.port)")
        try host.waitForJoined([bobsCall, carolsCall])
        _ = try host.result(.merge(MergeParams(conversation: bobsCall, with: carolsCall)))
        let session = try host.result(.groupActivate(GroupActivateParams(conversation: bobsCall, identifier: "com.example.list", title: "List")))
        let id = try #require(session["session"] as? String)
        for member in [toBob, toCarol] {
            let offered = try member.nextEvent("groupSessionChanged") { ($0["change"] as? String) == "offered" }
            #expect((offered["session"] as? [String: Any])?["session"] as? String == id)
            // Ids compare ignoring case (docs/control-api.md, Shapes): one member joins with the id in upper case.
            _ = try member.result(.groupJoin(GroupSessionParams(session: member === toBob ? id.uppercased() : id)))
        }
        _ = try host.nextEvent("groupParticipantsChanged") { (($0["active"] as? [Any])?.count ?? 0) == 3 }

        // Bob and Carol send, interleaved, under the per-sender rate (20 a second): every send is answered once
        // delivered to both others.
        let count = Self.messagesEach
        var sent = (bob: [Int](), carol: [Int]())
        for index in 0..<count {
            sent.bob.append(try toBob.send(.groupSend(GroupSendParams(session: id, type: "b", data: .integer(Int64(index))))))
            sent.carol.append(try toCarol.send(.groupSend(GroupSendParams(session: id, type: "c", data: .integer(Int64(index))))))
            usleep(70_000)
        }
        for (member, ids) in [(toBob, sent.bob), (toCarol, sent.carol)] {
            for requestID in ids {
                let answer = try member.answer(requestID, timeout: 120)
                let result = try #require(answer["result"] as? [String: Any], "\(answer)")
                #expect((result["deliveredTo"] as? [String])?.count == 2 && (result["failed"] as? [String])?.isEmpty == true, "\(result)")
            }
        }
        let atHost = try host.messages(2 * count), atBob = try toBob.messages(count), atCarol = try toCarol.messages(count)
        for list in [atHost, atBob, atCarol] {
            let seqs = list.map(\.seq)
            #expect(seqs == seqs.sorted() && Set(seqs).count == seqs.count, "\(seqs.prefix(20))")
        }
        #expect(atBob.map(\.value) == Array(0..<count) && atCarol.map(\.value) == Array(0..<count))
        #expect(atCarol.map(\.seq) == atHost.filter { $0.type == "b" }.map(\.seq))
        #expect(atBob.map(\.seq) == atHost.filter { $0.type == "c" }.map(\.seq))
        let faults = relay.statistics
        #expect(faults.dropped > 0 && faults.duplicated > 0 && faults.reordered > 0, "\(faults)")
        // No MESSAGE was refused with a 5xx (each would have made its leg wait: "…; the leg waits …" in the debug log).
        let waits = (alice.process.lines + bob.process.lines + carol.process.lines).filter { $0.contains("the leg waits") }
        #expect(waits.isEmpty, "\(waits.prefix(3))")
    }

    @Test("bad input through the control API: unknown session, not joined, too large, unknown participant, no call")
    func refusals() throws {
        let alice = try Parleyd(["--user", "alice", "--media", "off"])
        let bob = try Parleyd(["--user", "bob", "--media", "off", "--auto-answer", "0"])
        let host = try GroupControl(alice), member = try GroupControl(bob)
        let nobody = try host.error(.groupSend(GroupSendParams(session: "nope", type: "text", data: .string("hi"))))
        #expect(nobody.code == "notFound")
        // A callee that never answers: a session cannot be activated on its ringing call (bob answers at once, so
        // his call could be joined before the request is read).
        let ringer = try Parleyd(["--user", "ringer", "--media", "off"])
        let ringing = try host.call("sip:ringer@127.0.0.1:\(ringer.port)")
        let early = try host.error(.groupActivate(GroupActivateParams(conversation: ringing, identifier: "x", title: "X")))
        #expect(early.code == "notJoined", "\(early)")
        _ = try host.result(.end(ConversationParams(conversation: ringing)))
        let call = try host.call("sip:bob@127.0.0.1:\(bob.port)")
        try host.waitForJoined([call])
        let session = try host.result(.groupActivate(GroupActivateParams(conversation: call, identifier: "x", title: "X")))
        let id = try #require(session["session"] as? String)
        #expect(session["maxMessageBytes"] as? Int == 768)
        let offered = try member.nextEvent("groupSessionChanged") { ($0["change"] as? String) == "offered" }
        #expect((offered["session"] as? [String: Any])?["state"] as? String == "waiting")
        let notJoined = try member.error(.groupSend(GroupSendParams(session: id, type: "text", data: .string("early"))))
        #expect(notJoined.code == "notJoined")
        _ = try member.result(.groupJoin(GroupSessionParams(session: id)))
        let big = try member.error(.groupSend(GroupSendParams(session: id, type: "blob", data: .string(String(repeating: "x", count: 2000)))))
        #expect(big.code == "messageTooLarge" && big.details["limit"] as? Int == 768 && big.details["size"] as? Int == 2006, "\(big)")
        let stranger = try member.error(.groupSend(GroupSendParams(session: id, type: "t", data: .integer(1), to: .only(["someone"]))))
        #expect(stranger.code == "unknownParticipant")
        let badMode = try member.error(.groupSend(GroupSendParams(session: id, type: "t", data: .integer(1), mode: "sometimes")))
        #expect(badMode.code == "invalidParams" && badMode.field == "mode")
        // A burst over the rate: 40 go at once (a few more as the bucket refills while they are sent), then
        // `throttled` with when to try again.
        var codes: [String] = []
        var ids: [Int] = []
        for index in 0..<45 { ids.append(try member.send(.groupSend(GroupSendParams(session: id, type: "n", data: .integer(Int64(index)))))) }
        for requestID in ids {
            let answer = try member.answer(requestID, timeout: 20)
            codes.append(((answer["error"] as? [String: Any])?["code"] as? String) ?? "ok")
        }
        let ok = codes.filter { $0 == "ok" }.count, throttled = codes.filter { $0 == "throttled" }.count
        #expect(ok >= 40 && throttled >= 1 && ok + throttled == 45, "\(codes)")
        // The host ends it: the member hears so.
        _ = try host.result(.groupEnd(GroupSessionParams(session: id)))
        _ = try member.nextEvent("groupSessionChanged") { ($0["change"] as? String) == "invalidated" }
    }

    @Test("sipp as a hostile member: 415 makes it a text member, 503 Retry-After waits and sends again, 500 fails it alone, 481 ends its call")
    func hostileMember() throws {
        let port = Interop.freePort()
        let sipp = try SippRun.start(
            ["-sf", SippInteropTests.scenario("uas-group-faults.xml"), "-i", "127.0.0.1", "-p", String(port), "-m", "1"])
        usleep(300_000)
        let alice = try Parleyd(["--user", "alice", "--display-name", "Alice", "--media", "off"])
        let host = try GroupControl(alice)
        let call = try host.call("sip:service@127.0.0.1:\(port)")
        try host.waitForJoined([call])
        let session = try host.result(.groupActivate(GroupActivateParams(conversation: call, identifier: "x", title: "X")))
        let id = try #require(session["session"] as? String)
        _ = try host.nextEvent("groupParticipantsChanged") { (($0["added"] as? [Any])?.count ?? 0) == 1 }
        let started = Date()
        let one = try host.answer(try host.send(.groupSend(GroupSendParams(session: id, type: "text", data: .string("one")))), timeout: 10)
        #expect(((one["result"] as? [String: Any])?["deliveredTo"] as? [String])?.count == 1, "\(one)")
        #expect(Date().timeIntervalSince(started) >= 0.9, "the 503's Retry-After: 1 was kept")
        let two = try host.result(.groupSend(GroupSendParams(session: id, type: "text", data: .string("two"))))
        #expect((two["failed"] as? [String])?.count == 1 && (two["deliveredTo"] as? [String])?.isEmpty == true, "\(two)")
        let three = try host.result(.groupSend(GroupSendParams(session: id, type: "text", data: .string("three"))))
        #expect((three["failed"] as? [String])?.count == 1, "\(three)")
        _ = try host.nextEvent("groupParticipantsChanged") { (($0["removed"] as? [Any])?.count ?? 0) == 1 }
        try alice.waitForEnded(1)
        #expect(try sipp.waitForExit(timeout: .seconds(20)) == 0, "\((sipp.lines + [sipp.standardError]).joined(separator: "\n"))")
    }

    @Test("a MESSAGE in the dialog is taken (textMessage: no session); one with a stale CSeq gets 500")
    func staleCSeq() throws {
        let parleyd = try Parleyd(["--auto-answer", "0", "--media", "off"])
        let control = try GroupControl(parleyd)
        let run = try SippInteropTests.sippCalls(parleyd, scenario: "uac-message-stale-cseq.xml")
        #expect(run.status == 0, "\(run.output)")
        let text = try control.nextEvent("textMessage") { _ in true }
        #expect(text["text"] as? String == "hello parley")
    }

    @Test("parley group: start, list, join, send text and JSON, watch sees the messages")
    func cli() throws {
        let alice = try Parleyd(["--user", "alice", "--display-name", "Alice", "--media", "off"])
        let bob = try Parleyd(["--user", "bob", "--display-name", "Bob", "--media", "off", "--auto-answer", "0"])
        let a = ["--data-dir", alice.dataDirectory.path], b = ["--data-dir", bob.dataDirectory.path]
        let watch = try RunningProcess(try Interop.binary("parley"), ["group", "watch"] + b, name: "parley group watch")
        defer { watch.process.terminate() }
        try watch.waitForLine("the watch banner") { $0.contains("watching parleyd") }
        let call = try ControlCLITests.parley(["call", "sip:bob@127.0.0.1:\(bob.port)"] + a)
        #expect(call.status == 0, "\(call.output)")
        try alice.process.waitForLine("the call joined") { $0.contains("→ joined") }
        let start = try ControlCLITests.parley(["group", "start", "1", "Groceries"] + a)
        #expect(start.status == 0 && start.output.contains("joined \"Groceries\" host"), "\(start.output)")
        try watch.waitForLine("the offer") { $0.contains("group    offered") && $0.contains("Groceries") }
        let list = try ControlCLITests.parley(["group", "list"] + b)
        let session = String(list.output.prefix(36))
        #expect(list.status == 0 && list.output.contains("waiting \"Groceries\" member"), "\(list.output)")
        let join = try ControlCLITests.parley(["group", "join", String(session.prefix(8))] + b)
        #expect(join.status == 0 && join.output.contains("joined"), "\(join.output)")
        let text = try ControlCLITests.parley(["group", "send", String(session.prefix(8)), "milk please"] + a)
        #expect(text.status == 0 && text.output.contains("delivered to 1"), "\(text.output)")
        try watch.waitForLine("the text") { $0.contains("[Alice] milk please") }
        let item = try ControlCLITests.parley(["group", "send", session, "--type", "app.item", "--data", #"{"item":"eggs","done":false}"#, "--keep"] + a)
        #expect(item.status == 0, "\(item.output)")
        try watch.waitForLine("the item") { $0.contains("app.item") && $0.contains("eggs") }
        let badJSON = try ControlCLITests.parley(["group", "send", session, "--type", "app.item", "--data", "{oops"] + a)
        #expect(badJSON.status == 64, "\(badJSON.output)")
        let leave = try ControlCLITests.parley(["group", "leave", session] + b)
        #expect(leave.status == 0 && leave.output.contains("invalidated"), "\(leave.output)")
    }
}

/// A control connection for group tests: requests sent without waiting, answers and events kept as they come.
final class GroupControl {
    private let client: ControlClient
    private var nextID = 0
    private var answers: [Int: [String: Any]] = [:]
    private var events: [(name: String, data: [String: Any])] = []
    private var delivered: [(seq: Int, type: String, value: Int)] = []
    /// The group messages whose data is not an integer (text, objects), whole.
    private var otherMessages: [[String: Any]] = []

    /// Subscribed to `daemon`'s events (with `audioLevels`, those too).
    convenience init(_ daemon: Parleyd, audioLevels: Bool = false) throws {
        try self.init(dataDirectory: daemon.dataDirectory, audioLevels: audioLevels)
    }

    init(dataDirectory: URL, audioLevels: Bool = false) throws {
        let directory = dataDirectory.path
        client = try ControlClient(socketPath: directory + "/control.sock", token: try ControlToken.read(from: directory), timeout: 10)
        _ = try result(.subscribe(SubscribeParams(audioLevels: audioLevels ? true : nil)))
    }

    deinit { client.close() }

    /// Sends a request; its answer is read later.
    func send(_ command: ControlCommand) throws -> Int {
        nextID += 1
        try client.send(ControlRequest(id: .number(nextID), command: command).encoded())
        return nextID
    }

    func answer(_ id: Int, timeout: TimeInterval = 10) throws -> [String: Any] {
        let deadline = Date().addingTimeInterval(timeout)
        while answers[id] == nil {
            guard Date() < deadline else { throw InteropError("no answer to request \(id) within \(timeout) s") }
            try readOne(until: deadline)
        }
        return answers.removeValue(forKey: id)!
    }

    func result(_ command: ControlCommand) throws -> [String: Any] {
        let answer = try answer(try send(command))
        guard let result = answer["result"] as? [String: Any] else { throw InteropError("\(command): \(answer)") }
        return result
    }

    func error(_ command: ControlCommand) throws -> (code: String, field: String?, details: [String: Any]) {
        let answer = try answer(try send(command))
        guard let error = answer["error"] as? [String: Any], let code = error["code"] as? String else {
            throw InteropError("\(command) was not refused: \(answer)")
        }
        let details = error["details"] as? [String: Any] ?? [:]
        return (code, details["field"] as? String, details)
    }

    /// Places a call; its conversation's uuid.
    func call(_ uri: String) throws -> String {
        let result = try result(.start(StartParams(to: uri)))
        return try (result["conversation"] as? [String: Any])?["uuid"] as? String ?? { throw InteropError("\(result)") }()
    }

    /// Waits until these conversations are joined.
    func waitForJoined(_ conversations: [String], timeout: TimeInterval = 15) throws {
        var waiting = Set(conversations.map { $0.lowercased() })
        let deadline = Date().addingTimeInterval(timeout)
        while !waiting.isEmpty {
            let change = try nextEvent("conversationChanged", until: deadline) { _ in true }
            if let conversation = change["conversation"] as? [String: Any], conversation["state"] as? String == "joined",
                let uuid = conversation["uuid"] as? String
            {
                waiting.remove(uuid.lowercased())
            }
        }
    }

    /// The next event `name` that `matches` (events before it are kept).
    func nextEvent(_ name: String, timeout: TimeInterval = 15, _ matches: ([String: Any]) -> Bool) throws -> [String: Any] {
        try nextEvent(name, until: Date().addingTimeInterval(timeout), matches)
    }

    private func nextEvent(_ name: String, until deadline: Date, _ matches: ([String: Any]) -> Bool) throws -> [String: Any] {
        while true {
            if let index = events.firstIndex(where: { $0.name == name && matches($0.data) }) { return events.remove(at: index).data }
            guard Date() < deadline else { throw InteropError("no \(name) event in time; kept: \(events.map(\.name).suffix(10))") }
            try readOne(until: deadline)
        }
    }

    /// Every event `name` that comes within `duration` (and those kept already), taken.
    func events(_ name: String, during duration: TimeInterval) throws -> [[String: Any]] {
        let deadline = Date().addingTimeInterval(duration)
        while Date() < deadline {
            do { try readOne(until: deadline) } catch let error as ControlClientError {
                guard case .timedOut = error else { throw error }
            }
        }
        let taken = events.filter { $0.name == name }.map(\.data)
        events.removeAll { $0.name == name }
        return taken
    }

    /// The group messages delivered, once `count` have come.
    func messages(_ count: Int, timeout: TimeInterval = 60) throws -> [(seq: Int, type: String, value: Int)] {
        let deadline = Date().addingTimeInterval(timeout)
        while delivered.count < count {
            guard Date() < deadline else { throw InteropError("\(delivered.count) of \(count) messages arrived") }
            try readOne(until: deadline)
        }
        return delivered
    }

    /// The next group message (not an integer one) that `matches`.
    func nextGroupMessage(timeout: TimeInterval, _ matches: ([String: Any]) -> Bool) throws -> [String: Any] {
        let deadline = Date().addingTimeInterval(timeout)
        while true {
            if let index = otherMessages.firstIndex(where: matches) { return otherMessages.remove(at: index) }
            guard Date() < deadline else { throw InteropError("no such group message in time; kept: \(otherMessages.suffix(5))") }
            try readOne(until: deadline)
        }
    }

    private func readOne(until deadline: Date) throws {
        let line = try client.readLine(timeout: max(0.05, deadline.timeIntervalSinceNow))
        guard let object = try JSONSerialization.jsonObject(with: line) as? [String: Any] else { return }
        if let event = object["event"] as? String, let data = object["data"] as? [String: Any] {
            if event == "groupMessage", let value = data["data"] as? Int {
                delivered.append((data["seq"] as? Int ?? -1, data["type"] as? String ?? "", value))
            } else if event == "groupMessage" {
                otherMessages.append(data)
            } else {
                events.append((event, data))
            }
        } else if let id = object["id"] as? Int {
            answers[id] = object
        }
    }
}
