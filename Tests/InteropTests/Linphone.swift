import Foundation
import ParleyTestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// linphonec 5.1 (Debian linphone-cli) and one parleyd in network and PID namespaces of their own, as the interop
/// notes prescribe: only loopback up, plus a default route (without one linphonec never opens its SIP port). The
/// namespace's shell starts linphonec in the background, reading commands from a FIFO the test holds open (it quits
/// at EOF), waits for its SIP port, and becomes parleyd; when parleyd ends, the PID namespace takes linphonec with
/// it. linphonec runs in file mode: it plays a WAV file of `tone` Hz to its calls and records what it hears.
///
/// With `namespace` (a ``LoopbackNamespace`` the test made, where it may also run Kamailio) they share that network
/// namespace instead of a new one; with `account` linphonec registers an address of record through a proxy there.
final class LinphoneAndParleyd {
    /// An account linphonec registers (its `[proxy_0]`): `identity` (`sip:dave@example.test`) at the proxy at
    /// 127.0.0.1:`proxyPort`. liblinphone sends REGISTER to `reg_proxy` (it resolves that host even when a route is
    /// set), and its calls through `reg_route`: both name the proxy's address, so nothing is looked up in DNS.
    struct Account {
        let identity: String
        let proxyPort: UInt16
    }

    /// parleyd (the namespace's first process); its output is parleyd's.
    let process: RunningProcess
    /// linphonec's SIP port (UDP).
    let linphonePort: UInt16
    /// parleyd's SIP port (UDP and TCP).
    let parleydPort: UInt16
    /// Where parleyd records what it hears (one WAV per call).
    let parleydRecordings: URL
    /// What linphonec heard.
    let linphoneRecording: URL
    /// parleyd's data directory (its control socket is reachable from outside the namespace: a path, not a port).
    let parleydData: URL
    private let directory: URL
    private let commands: Int32

    /// Starts both; `parleyd` gives parleyd's arguments beyond listening, data directory and audio, knowing
    /// linphonec's port. parleyd sends 1,000 Hz. `defaultPort` puts parleyd on 5060 (free: the namespace is ours).
    /// With `video`, linphonec takes video (`-V -C`: its static picture as camera, no display) and accepts it in
    /// calls and upgrades, and logs at level 5 (its decoder's lines say what it received).
    init(
        tone: Double = 440, sipOptions: [String] = [], namespace: String? = nil, account: Account? = nil,
        defaultPort: Bool = false, video: Bool = false, parleyd: (UInt16) -> [String]
    ) throws {
        directory = FileManager.default.temporaryDirectory.appending(path: "parley-linphone-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let ports = Interop.freePorts(count: 2)
        (linphonePort, parleydPort) = (ports, defaultPort ? 5060 : ports + 1)
        parleydRecordings = directory.appending(path: "heard-by-parleyd")
        linphoneRecording = directory.appending(path: "heard-by-linphone.wav")
        let played = directory.appending(path: "played.wav")
        try Self.writeTone(tone, seconds: 30, to: played)
        let rtpBase = 20_000 + Int.random(in: 0..<400) * 100
        let proxy = account.map {
            """
            [proxy_0]
            reg_proxy=<sip:127.0.0.1:\($0.proxyPort)>
            reg_route=<sip:127.0.0.1:\($0.proxyPort);lr>
            reg_identity=\($0.identity)
            reg_expires=3600
            reg_sendregister=1
            publish=0

            """
        } ?? ""
        try """
            [sip]
            sip_port=\(linphonePort)
            sip_tcp_port=0
            sip_tls_port=0
            default_proxy=\(account == nil ? -1 : 0)
            \(sipOptions.joined(separator: "\n"))
            \(proxy)\(video ? "[video]\ncapture=1\ndisplay=0\nautomatically_initiate=1\nautomatically_accept=1\nsize=vga\n" : "")[rtp]
            audio_rtp_port=\(rtpBase + 98)
            video_rtp_port=\(rtpBase + 96)
            [storage]
            uri=\(directory.appending(path: "linphone.db").path)
            """.write(to: directory.appending(path: "linphonerc"), atomically: true, encoding: .utf8)
        let fifo = directory.appending(path: "commands").path
        guard mkfifo(fifo, 0o600) == 0 else { throw InteropError("mkfifo \(fifo): errno \(errno)") }
        // Read-write: opening never blocks, and the FIFO keeps a writer for as long as the test holds it.
        commands = open(fifo, O_RDWR)
        guard commands >= 0 else { throw InteropError("open \(fifo): errno \(errno)") }
        parleydData = directory.appending(path: "parleyd")
        let data = parleydData.path
        let parleydArguments =
            [try Interop.binary("parleyd").path, "--listen", "udp://127.0.0.1:\(parleydPort)", "--data-dir", data,
             "--log-level", "debug", "--media", "gstreamer", "--audio-source", "tone:1000",
             "--audio-sink", "file:\(parleydRecordings.path)", "--rtp-ports", "\(rtpBase)-\(rtpBase + 49)"]
            + parleyd(linphonePort)
        // A namespace of the test's own already has loopback up and the default route.
        let setUp = namespace == nil ? "ip link set lo up && ip route add default dev lo || exit 70" : ""
        let script = """
            \(setUp)
            linphonec -c '\(directory.appending(path: "linphonerc").path)' -a \(video ? "-V -C -d 5" : "") < '\(fifo)' > '\(directory.appending(path: "linphone.out").path)' 2>&1 &
            for attempt in $(seq 100); do
                ss -Hlun "sport = :\(linphonePort)" | grep -q . && break
                sleep 0.1
            done
            exec \(parleydArguments.map { "'\($0)'" }.joined(separator: " "))
            """
        // Commands linphonec reads first: file mode, what it plays and where it records.
        for command in ["soundcard use files", "play \(played.path)", "record \(linphoneRecording.path)"] {
            Self.write(command, to: commands)
        }
        let unshare = [try Interop.tool("unshare").path] + (namespace == nil ? ["-n"] : [])
            + ["-p", "-f", "--kill-child=SIGTERM", "sh", "-c", script]
        let command = (namespace.map { ["/usr/sbin/ip", "netns", "exec", $0] } ?? []) + unshare
        process = try RunningProcess(
            URL(fileURLWithPath: command[0]), Array(command.dropFirst()), name: "linphonec+parleyd")
        try process.waitForLine("parleyd's listening line") { $0.contains("listening on") }
    }

    deinit {
        send("quit")
        // unshare blocks SIGTERM while it waits for its child (a SIGTERM would cost stop()'s whole timeout): it is
        // killed by its PID, which sends parleyd SIGTERM (--kill-child); parleyd's end ends the PID namespace.
        kill(process.process.processIdentifier, SIGKILL)
        _ = try? process.waitForExit(timeout: .seconds(10))
        close(commands)
        try? FileManager.default.removeItem(at: directory)
    }

    /// Types a command to linphonec.
    func send(_ command: String) { Self.write(command, to: commands) }

    private static func write(_ command: String, to fifo: Int32) {
        let line = Array((command + "\n").utf8)
        _ = line.withUnsafeBytes { Glibc.write(fifo, $0.baseAddress, $0.count) }
    }

    /// What linphonec printed so far.
    var linphoneOutput: String {
        (try? String(contentsOf: directory.appending(path: "linphone.out"), encoding: .utf8)) ?? ""
    }

    /// Waits until linphonec has printed `text`.
    func waitForLinphone(_ text: String, timeout: Duration = .seconds(10)) throws {
        let deadline = ContinuousClock.now + timeout
        while !linphoneOutput.contains(text) {
            guard ContinuousClock.now < deadline else {
                throw InteropError("linphonec did not print \(text.debugDescription): \(linphoneOutput)")
            }
            Thread.sleep(forTimeInterval: 0.05)
        }
    }

    /// The one recording parleyd made.
    func parleydHeard() throws -> Recording {
        let files = try FileManager.default.contentsOfDirectory(atPath: parleydRecordings.path).filter { $0.hasSuffix(".wav") }
        try #require(files.count == 1, "one recording: \(files)")
        return try Recording(wavAt: parleydRecordings.appending(path: files[0]).path)
    }

    /// What linphonec recorded.
    func linphoneHeard() throws -> Recording {
        try Recording(wavAt: linphoneRecording.path)
    }

    /// A 16-bit mono 8 kHz WAV file of a sine.
    static func writeTone(_ hertz: Double, seconds: Int, to url: URL) throws {
        let samples = (0..<(8_000 * seconds)).map { Int16(8_000 * sin(2 * .pi * hertz * Double($0) / 8_000)) }
        var data = Data()
        func append<T: FixedWidthInteger>(_ value: T) { withUnsafeBytes(of: value.littleEndian) { data.append(contentsOf: $0) } }
        data.append(contentsOf: Array("RIFF".utf8))
        append(UInt32(36 + samples.count * 2))
        data.append(contentsOf: Array("WAVEfmt ".utf8))
        append(UInt32(16)); append(UInt16(1)); append(UInt16(1)); append(UInt32(8_000)); append(UInt32(16_000))
        append(UInt16(2)); append(UInt16(16))
        data.append(contentsOf: Array("data".utf8))
        append(UInt32(samples.count * 2))
        for sample in samples { append(sample) }
        try data.write(to: url)
    }
}

/// A network namespace the test makes, with only loopback up and a default route through it (without one linphonec
/// never opens its SIP port): Kamailio (`Kamailio(namespace:)`) and `LinphoneAndParleyd(namespace:)` meet there.
/// Nothing in it reaches beyond the machine. Removed when the value goes (processes still inside keep it alive
/// until they end).
final class LoopbackNamespace {
    let name: String

    init() throws {
        name = "parley-lo-" + String(UInt32.random(in: 0x1000_0000...UInt32.max), radix: 16)
        try NamespacePair.ip(["netns", "add", name])
        do {
            try NamespacePair.ip(["-n", name, "link", "set", "lo", "up"])
            try NamespacePair.ip(["-n", name, "route", "add", "default", "dev", "lo"])
        } catch {
            _ = try? NamespacePair.ip(["netns", "del", name])
            throw error
        }
    }

    deinit { _ = try? NamespacePair.ip(["netns", "del", name]) }
}
