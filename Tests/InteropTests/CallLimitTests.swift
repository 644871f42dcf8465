import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// parleyd at its live-call limit (`--max-calls`).
@Suite("parleyd: the live-call limit", .serialized)
struct CallLimitTests {
    /// A UDP socket on a free loopback port that sends requests and collects whatever comes back.
    final class Peer {
        let fd: Int32
        let port: UInt16

        let host: String

        /// A socket on `host` (another loopback address, 127.0.0.2, is another host).
        init(host: String = "127.0.0.1") throws {
            let fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
            self.fd = fd
            self.host = host
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_addr.s_addr = inet_addr(host)
            var length = socklen_t(MemoryLayout<sockaddr_in>.size)
            let bound = withUnsafeMutablePointer(to: &address) { pointer in
                pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0
                }
            }
            guard bound else { throw InteropError("cannot bind a UDP socket") }
            port = UInt16(bigEndian: address.sin_port)
            var timeout = timeval(tv_sec: 0, tv_usec: 200_000)
            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        }

        deinit { close(fd) }

        func invite(_ number: Int, to target: UInt16) -> String {
            """
            INVITE sip:parley@127.0.0.1:\(target) SIP/2.0\r
            Via: SIP/2.0/UDP \(host):\(port);branch=z9hG4bK-limit-\(number)\r
            Max-Forwards: 70\r
            From: <sip:flood@\(host)>;tag=f\(number)\r
            To: <sip:parley@127.0.0.1>\r
            Call-ID: limit-\(number)@flood\r
            CSeq: 1 INVITE\r
            Contact: <sip:flood@\(host):\(port)>\r
            Content-Length: 0\r
            \r

            """
        }

        func send(_ text: String, to target: UInt16) {
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = target.bigEndian
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            let bytes = Array(text.utf8)
            _ = withUnsafePointer(to: &address) { pointer in
                pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    sendto(fd, bytes, bytes.count, 0, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
        }

        /// Every datagram that arrives until none has for 200 ms, or `seconds` passed.
        func receiveAll(seconds: Double = 3) -> [String] {
            var messages: [String] = []
            var buffer = [UInt8](repeating: 0, count: 65_536)
            let deadline = Date().addingTimeInterval(seconds)
            while Date() < deadline {
                let count = recv(fd, &buffer, buffer.count, 0)
                if count <= 0 { if !messages.isEmpty { break } else { continue } }
                messages.append(String(decoding: buffer[..<count], as: UTF8.self))
            }
            return messages
        }
    }

    @Test("beyond --max-calls new INVITEs get 503 with Retry-After, never ring, leave no history record, and are counted")
    func limit() throws {
        let parleyd = try Parleyd(["--max-calls", "3"])
        let peer = try Peer()
        for number in 1...8 { peer.send(peer.invite(number, to: parleyd.port), to: parleyd.port) }
        let answers = peer.receiveAll()
        func finals(_ status: String) -> [String] { answers.filter { $0.hasPrefix("SIP/2.0 \(status)") } }
        #expect(finals("503").count == 5, "\(answers.map { $0.prefix(40) })")
        #expect(finals("503").allSatisfy { $0.contains("\r\nRetry-After: 5\r\n") })
        #expect(Set(finals("180").compactMap { $0.split(separator: "\r\n").first { $0.hasPrefix("Call-ID:") } }).count == 3)
        let deadline = Date().addingTimeInterval(5)
        func ringing() -> Int { parleyd.process.lines.filter { $0.contains("new → ringing") }.count }
        while ringing() < 3 && Date() < deadline { usleep(20_000) }
        #expect(ringing() == 3)
        let status = try ControlCLITests.parley(["status", "--json", "--data-dir", parleyd.dataDirectory.path])
        #expect(status.output.contains(#""callsRefusedOverLimit":5"#), "\(status.output)")
        #expect(parleyd.process.lines.filter { $0.contains("refusing new calls with 503") }.count == 1)
        #expect(try parleyd.process.stop() == 0)
        let history = try ControlCLITests.parley(["history", "--json", "--data-dir", parleyd.dataDirectory.path])
        #expect(history.output.components(separatedBy: "\"callID\" : \"limit-").count - 1 == 3, "\(history.output)")
    }

    @Test("one address rings at most --max-ringing-per-source calls; another address still rings; ended calls free the slots")
    func perSource() throws {
        let parleyd = try Parleyd(["--max-ringing-per-source", "2"])
        let flooder = try Peer(host: "127.0.0.1")
        for number in 1...6 { flooder.send(flooder.invite(100 + number, to: parleyd.port), to: parleyd.port) }
        var answers = flooder.receiveAll()
        #expect(answers.filter { $0.hasPrefix("SIP/2.0 503 Too Many Calls From Your Address") }.count == 4, "\(answers.map { $0.prefix(50) })")
        let neighbour = try Peer(host: "127.0.0.2")
        neighbour.send(neighbour.invite(200, to: parleyd.port), to: parleyd.port)
        #expect(neighbour.receiveAll().contains { $0.hasPrefix("SIP/2.0 180") }, "another address still rings")
        let status = try ControlCLITests.parley(["status", "--json", "--data-dir", parleyd.dataDirectory.path])
        #expect(status.output.contains(#""callsRefusedPerSource":4"#), "\(status.output)")
        let directory = ["--data-dir", parleyd.dataDirectory.path]
        for _ in 0..<2 { #expect(try ControlCLITests.parley(["end", "1"] + directory).status == 0) }  // the flooder's two
        flooder.send(flooder.invite(107, to: parleyd.port), to: parleyd.port)
        answers = flooder.receiveAll()
        #expect(answers.contains { $0.hasPrefix("SIP/2.0 180") && $0.contains("limit-107@flood") }, "\(answers.map { $0.prefix(50) })")
    }
}

/// parleyd's stream connection limits, set from its command line.
@Suite("parleyd: connection limits", .serialized)
struct ConnectionLimitTests {
    /// Whether parleyd closes `fd` within `seconds` (EOF or reset), discarding what arrives before.
    static func closes(_ fd: Int32, within seconds: Int) -> Bool {
        var timeout = timeval(tv_sec: seconds, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var buffer = [UInt8](repeating: 0, count: 1024)
        while true {
            let count = recv(fd, &buffer, buffer.count, 0)
            if count > 0 { continue }
            return count == 0 || errno == ECONNRESET
        }
    }

    @Test("--max-connections-per-source and --connection-idle-timeout: a third connection is refused, a dripper is closed")
    func flags() throws {
        let parleyd = try Parleyd(["--max-connections-per-source", "2", "--connection-idle-timeout", "1"])
        let first = try #require(DaemonRobustnessTests.connectTCP(port: parleyd.port))
        let second = try #require(DaemonRobustnessTests.connectTCP(port: parleyd.port))
        defer { close(first); close(second) }
        let refusedAt = Date()
        let third = try #require(DaemonRobustnessTests.connectTCP(port: parleyd.port))
        defer { close(third) }
        #expect(Self.closes(third, within: 2), "the third connection from one address is closed")
        #expect(Date().timeIntervalSince(refusedAt) < 0.5, "at once, not at the 1 s idle timeout")
        // The first drips an OPTIONS a byte every 200 ms, for 3 s: never a whole message, so it is closed after about
        // 1 s, while it still drips (were single bytes progress, it would stay open as long as they come).
        var closedWhileDripping = false
        var probe = [UInt8](repeating: 0, count: 64)
        for byte in Array("OPTIONS sip:parley@127.0.0.1 SIP/2.0\r\nVia: SIP/2.0/TCP".utf8).prefix(15) {
            _ = withUnsafeBytes(of: byte) { send(first, $0.baseAddress, 1, Int32(MSG_NOSIGNAL)) }
            usleep(200_000)
            let got = recv(first, &probe, probe.count, Int32(MSG_DONTWAIT))
            if got == 0 || (got < 0 && errno == ECONNRESET) {
                closedWhileDripping = true
                break
            }
        }
        #expect(closedWhileDripping)
        for bad in [["--max-connections", "0"], ["--max-connections-per-source", "x"], ["--connection-idle-timeout", "-1"],
                    ["--max-requests-per-source", "-1"], ["--source-ban", "0"], ["--exempt-source", "proxy.example"]] {
            let refused = try RunningProcess(try Interop.binary("parleyd"), bad + ["--no-control", "--no-history"], name: "parleyd")
            #expect(try refused.waitForExit() == 64, "\(bad)")
        }
    }
}

/// Stream connections held by one source while others call.
@Suite("parleyd: a connection attack from one source", .serialized)
struct ConnectionAttackTests {
    /// Whether parleyd has closed `fd` (end of file or reset), without waiting; data that came is discarded.
    static func isClosed(_ fd: Int32) -> Bool {
        var buffer = [UInt8](repeating: 0, count: 1024)
        while true {
            let count = recv(fd, &buffer, buffer.count, Int32(MSG_DONTWAIT))
            if count > 0 { continue }
            return count == 0 || errno == ECONNRESET
        }
    }

    @Test("127.0.0.2 keeps 40 TCP and TLS connections open and dripping: it holds its share only, and TCP and TLS calls connect")
    func attack() throws {
        let tls = try TLSInteropTests.certificate()
        defer { try? FileManager.default.removeItem(at: tls.directory) }
        let limit = 8
        let callee = try Parleyd(
            ["--auto-answer", "0", "--max-connections-per-source", String(limit), "--connection-idle-timeout", "5"],
            tls: (tls.cert, tls.key))
        let tlsPort = try #require(callee.tlsPort)
        // The attacker: 20 connections to each listener, reopened as soon as parleyd closes one, each dripping a
        // byte every half second (never a whole message), until told to stop.
        let ports = Array(repeating: callee.port, count: 20) + Array(repeating: tlsPort, count: 20)
        let attacking = Locked(true)
        let connections = Locked<[Int32]>(ports.map { DaemonRobustnessTests.connectTCP(port: $0, from: "127.0.0.2") ?? -1 })
        let reopened = Locked(0)
        let attacker = Thread {
            while attacking.withLock({ $0 }) {
                connections.withLock { fds in
                    for index in fds.indices {
                        if fds[index] < 0 || Self.isClosed(fds[index]) {
                            if fds[index] >= 0 { close(fds[index]) }
                            fds[index] = DaemonRobustnessTests.connectTCP(port: ports[index], from: "127.0.0.2") ?? -1
                            reopened.withLock { $0 += 1 }
                        } else {
                            _ = withUnsafeBytes(of: UInt8(0x4F)) { send(fds[index], $0.baseAddress, 1, Int32(MSG_NOSIGNAL)) }
                        }
                    }
                }
                usleep(500_000)
            }
        }
        attacker.start()
        defer {
            attacking.withLock { $0 = false }
            connections.withLock { $0.forEach { if $0 >= 0 { close($0) } } }
        }
        // Its surplus is closed as soon as parleyd accepts it (a loaded machine may take a moment to get there).
        func holding() -> Int { connections.withLock { fds in fds.filter { $0 >= 0 && !Self.isClosed($0) }.count } }
        let settled = ContinuousClock.now + .seconds(3)
        var held = holding()
        while held != limit && ContinuousClock.now < settled {
            usleep(50_000)
            held = holding()
        }
        #expect(held == limit, "the attacker holds its share, \(limit) connections, no more and no fewer: \(held)")

        // Meanwhile calls over TCP (sipp) and over TLS (another parleyd) from 127.0.0.1 connect and end.
        let sipp = try SippRun.run([
            "-sn", "uac", "127.0.0.1:\(callee.port)", "-i", "127.0.0.1", "-p", String(Interop.freePort()), "-t", "t1",
            "-s", "parley", "-m", "3", "-r", "3", "-d", "200",
        ])
        #expect(sipp.status == 0, "\(sipp.output)")
        let caller = try Parleyd(
            ["--tls-ca", tls.cert, "--call", "sips:parley@localhost:\(tlsPort)", "--script", "wait 200; end"],
            tls: (tls.cert, tls.key))
        try caller.waitForEnded(1)
        #expect(caller.transitions == [["idle", "ringing", "joined", "leaving", "left (localEnded)"]])

        // Stop reopening; a moment later no more than the limit of the attacker's connections are open, and it had
        // to reopen many (the surplus closed at once, the drippers at the idle timeout).
        attacking.withLock { $0 = false }
        usleep(700_000)
        let open = holding()
        #expect(open <= limit, "\(open) of the attacker's connections open; at most \(limit) may be")
        #expect(reopened.withLock { $0 } >= 40 - limit, "\(reopened.withLock { $0 }) reopened")
    }
}

/// parleyd taking calls only from the callers it accepts (`--accept-from`).
@Suite("parleyd: who may ring", .serialized)
struct CallerPolicyTests {
    @Test("--accept-from contacts: a contact rings; a stranger gets 403, never rings and leaves no record; bad values are usage errors")
    func contactsOnly() throws {
        let bob = try Parleyd(["--user", "bob"])
        let mallory = try Parleyd(["--user", "mallory"])
        let contacts = bob.dataDirectory.appending(path: "contacts.json")
        try #"{"contacts": [{"name": "Bob Builder", "handles": [{"kind": "generic", "value": "sip:bob@127.0.0.1:\#(bob.port)"}]}]}"#
            .write(to: contacts, atomically: true, encoding: .utf8)
        let alice = try Parleyd(["--contacts", contacts.path, "--accept-from", "contacts"])
        let target = "sip:parley@127.0.0.1:\(alice.port)"
        let friend = try ControlCLITests.parley(["call", target, "--data-dir", bob.dataDirectory.path])
        #expect(friend.status == 0, "\(friend.output)")
        let stranger = try ControlCLITests.parley(["call", target, "--data-dir", mallory.dataDirectory.path])
        #expect(stranger.status == 1, "\(stranger.output)")
        #expect(stranger.output.contains("403"), "\(stranger.output)")
        try alice.waitForTransition(to: "ringing")
        #expect(alice.transitions.count == 1, "only Bob's call rang: \(alice.transitions)")
        let status = try ControlCLITests.parley(["status", "--json", "--data-dir", alice.dataDirectory.path])
        #expect(status.output.contains(#""callersRefused":1"#), "\(status.output)")
        #expect(try alice.process.stop() == 0)
        let history = try ControlCLITests.parley(["history", "--json", "--data-dir", alice.dataDirectory.path])
        #expect(history.output.contains("sip:bob@127.0.0.1:\(bob.port)") && !history.output.contains("mallory"), "\(history.output)")

        for bad in [["--accept-from", "contacts"], ["--accept-from", "not a caller"], ["--accept-from", ","], ["--record-blocked"],
                    ["--accept-from", "nobody"], ["--accept-from", "any,sip:a@127.0.0.1"], ["--accept-from", "sip:a@127.0.0.1,,"],
                    ["--accept-from", "Contacts"]] {
            let refused = try RunningProcess(try Interop.binary("parleyd"), bad + ["--no-control", "--no-history"], name: "parleyd")
            #expect(try refused.waitForExit() == 64, "\(bad)")
        }
    }

    @Test("--record-blocked: a refused stranger leaves one blocked record, read and not missed; an accepted caller rings")
    func blockedRecords() throws {
        let bob = try Parleyd(["--user", "bob"])
        let mallory = try Parleyd(["--user", "mallory"])
        let alice = try Parleyd(["--accept-from", "sip:bob@127.0.0.1:\(bob.port)", "--record-blocked"])
        let target = "sip:parley@127.0.0.1:\(alice.port)"
        let stranger = try ControlCLITests.parley(["call", target, "--data-dir", mallory.dataDirectory.path])
        #expect(stranger.status == 1 && stranger.output.contains("403"), "\(stranger.output)")
        let friend = try ControlCLITests.parley(["call", target, "--data-dir", bob.dataDirectory.path])
        #expect(friend.status == 0, "\(friend.output)")
        try alice.waitForTransition(to: "ringing")
        #expect(alice.transitions.count == 1, "only Bob's call rang: \(alice.transitions)")
        let directory = ["--data-dir", alice.dataDirectory.path]
        // The record is written by the history's group commit, off the SIP thread: on a loaded machine it may land a
        // moment after the call it records was refused, so wait for it (bounded).
        var history = try ControlCLITests.parley(["history", "--json"] + directory)
        let deadline = ContinuousClock.now + .seconds(10)
        while !history.output.contains(#""status" : "blocked""#), ContinuousClock.now < deadline {
            Thread.sleep(forTimeInterval: 0.2)
            history = try ControlCLITests.parley(["history", "--json"] + directory)
        }
        #expect(history.output.components(separatedBy: #""status" : "blocked""#).count - 1 == 1, "\(history.output)")
        #expect(history.output.contains("sip:mallory@127.0.0.1:\(mallory.port)"), "\(history.output)")
        let missed = try ControlCLITests.parley(["history", "--json", "--status", "missed"] + directory)
        #expect(!missed.output.contains("mallory"), "a blocked call is not a missed call: \(missed.output)")
        let unread = try ControlCLITests.parley(["history", "--json", "--unread"] + directory)
        #expect(!unread.output.contains("mallory"), "nor unread: \(unread.output)")
    }
}
