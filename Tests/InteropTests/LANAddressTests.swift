import Foundation
import ParleyTestSupport
import Testing

/// Two hosts on one link, each a network namespace this test makes (documentation addresses, no route off the
/// machine), joined by a veth pair; removed again when the value goes.
final class NamespacePair {
    /// The namespaces' names, A then B.
    let names: [String]
    /// A's and B's IPv4 and IPv6 addresses.
    static let v4 = ["192.0.2.1", "192.0.2.2"], v6 = ["2001:db8::1", "2001:db8::2"]

    init() throws {
        let tag = String(UInt32.random(in: 0x1000_0000...UInt32.max), radix: 16)
        names = ["parley-\(tag)-a", "parley-\(tag)-b"]
        let links = ["pa\(tag)", "pb\(tag)"]
        do {
            for name in names { try Self.ip(["netns", "add", name]) }
            try Self.ip(["link", "add", links[0], "type", "veth", "peer", "name", links[1]])
            for side in 0..<2 {
                try Self.ip(["link", "set", links[side], "netns", names[side]])
                try Self.ip(["-n", names[side], "addr", "add", "\(Self.v4[side])/24", "dev", links[side]])
                try Self.ip(["-n", names[side], "addr", "add", "\(Self.v6[side])/64", "dev", links[side], "nodad"])
                try Self.ip(["-n", names[side], "link", "set", links[side], "up"])
                try Self.ip(["-n", names[side], "link", "set", "lo", "up"])
            }
        } catch {
            remove()
            throw error
        }
    }

    /// Runs `executable` with `arguments` inside namespace `side` (0: A, 1: B); `ip netns exec` execs it, so the
    /// process is the program itself.
    func start(_ side: Int, _ executable: URL, _ arguments: [String], name: String) throws -> RunningProcess {
        try Self.start(in: names[side], executable, arguments, name: name)
    }

    /// Runs `executable` with `arguments` inside the namespace `namespace` (`ip netns exec` execs it).
    static func start(in namespace: String, _ executable: URL, _ arguments: [String], name: String) throws -> RunningProcess {
        try RunningProcess(
            URL(fileURLWithPath: "/usr/sbin/ip"), ["netns", "exec", namespace, executable.path] + arguments, name: name,
            directory: FileManager.default.temporaryDirectory)
    }

    private func remove() {
        for name in names { try? Self.ip(["netns", "del", name]) }  // the veth pair goes with its namespaces
    }

    deinit { remove() }

    @discardableResult
    static func ip(_ arguments: [String]) throws -> String {
        let process = try RunningProcess(URL(fileURLWithPath: "/usr/sbin/ip"), arguments, name: "ip")
        guard try process.waitForExit(timeout: .seconds(10)) == 0 else {
            throw InteropError("ip \(arguments.joined(separator: " ")) failed (this test makes network namespaces: it runs as root): "
                + process.standardError)
        }
        return process.lines.joined(separator: "\n")
    }
}

/// parleyd listening on every interface (`0.0.0.0`, `::`) with a peer on another host: what it writes in Via,
/// Contact, From, o= and c= is the address of the interface toward the peer, never the wildcard, so ACK, BYE and
/// RTP reach it.
@Suite("LAN: a parleyd on every interface gives peers its address on their link", .serialized)
struct LANAddressTests {
    @Test("called from another host over IPv4 and IPv6: the answer names our address on that link, never the wildcard",
          arguments: [(NamespacePair.v4, "0.0.0.0"), (NamespacePair.v6, "::")] as [([String], String)])
    func answered(addresses: [String], wildcard: String) throws {
        let hosts = try NamespacePair()
        let port = Interop.freePort(), sippPort = Interop.freePort()
        let data = FileManager.default.temporaryDirectory.appending(path: "parleyd-lan-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: data) }
        let listen = wildcard.contains(":") ? "[\(wildcard)]" : wildcard
        let parleyd = try hosts.start(0, try Interop.binary("parleyd"), [
            "--listen", "udp://\(listen):\(port)", "--user", "alice", "--data-dir", data.path, "--auto-answer", "100",
            "--media", "gstreamer", "--audio-source", "tone:1000", "--audio-sink", "null",
        ], name: "parleyd")
        defer { _ = try? parleyd.stop() }
        try parleyd.waitForLine("its listening line") { $0.contains("listening on") }

        let log = FileManager.default.temporaryDirectory.appending(path: "sipp-lan-\(UUID().uuidString).log")
        defer { try? FileManager.default.removeItem(at: log) }
        let target = addresses[0].contains(":") ? "[\(addresses[0])]:\(port)" : "\(addresses[0]):\(port)"
        let sipp = try hosts.start(1, try Interop.tool("sipp"), [
            "-sn", "uac", target, "-i", addresses[1], "-p", String(sippPort), "-m", "1", "-d", "1000",
            "-nostdin", "-timeout", "20s", "-timeout_error", "-trace_msg", "-message_file", log.path,
        ], name: "sipp")
        #expect(try sipp.waitForExit(timeout: .seconds(30)) == 0, "the call through: \(sipp.lines.suffix(20))")

        let messages = try String(contentsOf: log, encoding: .utf8)
        let ours = messages.split(whereSeparator: \.isNewline).map(String.init).filter { $0.hasPrefix("Contact: <sip:alice@") || $0.hasPrefix("o=") || $0.hasPrefix("c=") }
        #expect(!messages.contains("0.0.0.0") && !messages.contains("[::]"), "\(messages)")
        #expect(!ours.contains { $0.trimmingCharacters(in: .whitespacesAndNewlines).hasSuffix(" ::") }, "\(ours)")
        let shown = addresses[0].contains(":") ? "[\(addresses[0])]" : addresses[0]
        #expect(ours.contains { $0.contains("sip:alice@\(shown):\(port)") }, "our Contact: \(ours)")
        #expect(ours.contains { $0.hasPrefix("c=") && $0.contains(addresses[0]) }, "our c=: \(ours)")
        #expect(ours.contains { $0.hasPrefix("o=- ") && $0.contains(addresses[0]) }, "our o=: \(ours)")
    }

    @Test("parleyd on 0.0.0.0 calls a parleyd on another host: the call connects, the tone is heard there, BYE ends it")
    func calledAcross() throws {
        let hosts = try NamespacePair()
        let (alicePort, bobPort) = (Interop.freePort(), Interop.freePort())
        let work = FileManager.default.temporaryDirectory.appending(path: "parleyd-lan-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: work) }
        let heard = work.appending(path: "heard")
        let bob = try hosts.start(1, try Interop.binary("parleyd"), [
            "--listen", "udp://0.0.0.0:\(bobPort)", "--user", "bob", "--data-dir", work.appending(path: "bob").path,
            "--auto-answer", "100", "--media", "gstreamer", "--audio-source", "silence", "--audio-sink", "file:\(heard.path)",
            "--rtp-ports", "41000-41099",
        ], name: "bob")
        defer { _ = try? bob.stop() }
        try bob.waitForLine("its listening line") { $0.contains("listening on") }
        let alice = try hosts.start(0, try Interop.binary("parleyd"), [
            "--listen", "udp://0.0.0.0:\(alicePort)", "--user", "alice", "--data-dir", work.appending(path: "alice").path,
            "--media", "gstreamer", "--audio-source", "tone:1000", "--audio-sink", "null", "--rtp-ports", "42000-42099",
            "--call", "sip:bob@\(NamespacePair.v4[1]):\(bobPort)", "--script", "wait 2500; end", "--exit-after", "1",
        ], name: "alice")
        #expect(try alice.waitForExit(timeout: .seconds(30)) == 0, "\(alice.lines.suffix(20))")
        try bob.waitForLine("the call ended by alice's BYE") { $0.contains("left (remoteEnded)") }

        let files = try FileManager.default.contentsOfDirectory(atPath: heard.path).filter { $0.hasSuffix(".wav") }
        let recording = try Recording(wavAt: heard.appending(path: try #require(files.first)).path)
        #expect(recording.seconds(at: 1_000) >= 1.5, "bob heard alice's tone across the link: \(recording.dominantFrequencies())")
    }
}
