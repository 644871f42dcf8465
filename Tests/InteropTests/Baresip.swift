import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// A headless baresip 1.0.0 (Debian's) on loopback with a temporary configuration directory, driven through its
/// `cons` module: each command line (`/dial URI`, `/hangup`, `/hold`, `/resume`, `/quit`) is one UDP datagram.
///
/// It runs as the account `sip:alice@127.0.0.1:port` with `answermode=auto`, so it answers calls at once. It listens
/// for SIP on UDP and TCP at `port` and, when given a certificate, for TLS at `port + 1` (baresip 1.0.0 always puts
/// its TLS listener one above `sip_listen`). It prints every SIP message it sends or receives (`-s`), which the
/// tests read to follow the call and quote when they fail. It quits by itself after a minute whatever happens, and
/// `deinit` stops it and removes its directory.
///
/// With `lab`, it runs on a side of the NAT lab (``NATLabScript``) instead: listening for SIP on that host's address
/// at 5060 and for `cons` on the host's loopback at 5555 (fixed ports: the host's namespace is the lab's own), its
/// commands sent from inside the host, and ICE's host candidates from the host's interface.
final class Baresip {
    let process: RunningProcess
    /// The UDP and TCP SIP port (`sip_listen`).
    let port: UInt16
    /// The `cons` module's UDP control port.
    let controlPort: UInt16
    /// The temporary configuration directory (`-f`).
    let directory: URL
    /// The lab and the side it runs on, if it runs in the NAT lab.
    let lab: (lab: NATLabScript, side: NATLabScript.Side)?

    /// The TLS SIP port (listening only when started with a certificate).
    var tlsPort: UInt16 { port + 1 }

    /// Its own address on `transport`, for a peer to call.
    func uri(_ transport: SIPTransportName) -> String {
        switch transport {
        case .udp: "sip:alice@127.0.0.1:\(port)"
        case .tcp: "sip:alice@127.0.0.1:\(port);transport=tcp"
        case .tls: "sip:alice@127.0.0.1:\(tlsPort);transport=tls"
        }
    }

    /// Writes the configuration, starts baresip and returns once it says it is ready; `dial` (a SIP URI) is called
    /// at start-up; `certificate` enables its TLS listener.
    /// With `recordTo`, its `sndfile` module writes each call's audio there: `dump-…-dec.wav` what it received,
    /// `dump-…-enc.wav` what it sent.
    /// `contacts` are lines of its contacts file; the first is the current contact (`/message` goes to it).
    /// `account` replaces its accounts line (`<sip:USER@DOMAIN>;outbound="sip:PROXY";answermode=auto` registers at
    /// DOMAIN through PROXY); ``uri(_:)`` then no longer names it. `mediaEncryption` is its account's `mediaenc`
    /// (`srtp-mand`, `srtp-mandf`, `dtls_srtp`), loading the module that does it. `modules` are further modules to
    /// load (`ice.so`…); `verbose` adds its debug lines (`-v`: ICE's checks, among others).
    /// `lab` runs it on that side of the NAT lab (`.host1`, `.host2`), listening on `address` there.
    /// With `video`, it takes video calls: VP8 (`vp8.so`), its `fakevideo` picture as camera and display, and the
    /// `snapshot` module (`/snapshot_recv FILE.png` saves the next frame it receives).
    init(
        dial: String? = nil, certificate: SelfSignedCertificate? = nil, recordTo: URL? = nil, contacts: [String] = [],
        account: String? = nil, mediaEncryption: String? = nil, modules: [String] = [], verbose: Bool = false,
        lab: (lab: NATLabScript, side: NATLabScript.Side, address: String)? = nil, video: Bool = false
    ) throws {
        port = lab == nil ? Interop.freePorts(count: 2) : 5060
        controlPort = lab == nil ? Interop.freePort() : 5555
        self.lab = lab.map { ($0.lab, $0.side) }
        directory = FileManager.default.temporaryDirectory.appending(path: "baresip-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        do {
            let module = mediaEncryption.map { $0.hasPrefix("dtls") ? "dtls_srtp.so" : "srtp.so" }
            try Self.configuration(
                address: lab?.address, port: port, controlPort: controlPort, certificate: certificate, recordTo: recordTo,
                modules: (module.map { [$0] } ?? []) + modules + (video ? ["vp8.so", "fakevideo.so", "snapshot.so"] : [])
            ).write(to: directory.appending(path: "config"), atomically: true, encoding: .utf8)
            let encryption = mediaEncryption.map { ";mediaenc=\($0)" } ?? ""
            try ((account ?? "<sip:alice@127.0.0.1:\(port)>;regint=0;answermode=auto\(encryption)") + "\n")
                .write(to: directory.appending(path: "accounts"), atomically: true, encoding: .utf8)
            try contacts.map { $0 + "\n" }.joined()
                .write(to: directory.appending(path: "contacts"), atomically: true, encoding: .utf8)
            var arguments = ["-f", directory.path, "-s", "-t", "60"] + (verbose ? ["-v"] : [])
            if let dial { arguments += ["-e", "/dial \(dial)"] }
            if let lab {
                process = try lab.lab.start(on: lab.side, try Interop.tool("baresip"), arguments, name: "baresip")
            } else {
                process = try RunningProcess(try Interop.tool("baresip"), arguments, name: "baresip")
            }
        } catch {
            try? FileManager.default.removeItem(at: directory)
            throw error
        }
        try waitFor("its ready line") { $0 == "baresip is ready." }
    }

    /// The `config` file: loopback only (SIP, media and the control port), a sine wave as microphone and a null
    /// player (no sound card), G.711 only, no `stdio` module (stdin is /dev/null). With `address` (in the lab), SIP
    /// listens there and media goes from the host's interface.
    private static func configuration(
        address: String?, port: UInt16, controlPort: UInt16, certificate: SelfSignedCertificate?, recordTo: URL?,
        modules: [String]
    ) -> String {
        var lines = [
            "poll_method epoll",
            "sip_listen \(address ?? "127.0.0.1"):\(port)",
        ]
        if address == nil { lines.append("net_interface 127.0.0.1") }
        lines += [
            "audio_player aubridge,nil",
            "audio_source ausine,440",
            "audio_alert aubridge,nil",
            "ausrc_srate 48000",
            "ausrc_channels 2",
            "module_path /usr/lib/baresip/modules",
            "module g711.so",
            "module ausine.so",
            "module aubridge.so",
            "module cons.so",
            "module_app account.so",
            "module_app contact.so",
            "module_app menu.so",
            "cons_listen 127.0.0.1:\(controlPort)",
        ]
        // One PEM file with the certificate and its key, for its TLS listener. As a TLS client, baresip 1.0.0 (libre
        // 1.1.0) accepts parleyd's self-signed certificate without any CA configuration.
        if let certificate { lines.append("sip_certificate \(certificate.combined.path)") }
        if let recordTo { lines += ["module sndfile.so", "snd_path \(recordTo.path)"] }
        lines += modules.map { "module \($0)" }
        if modules.contains("fakevideo.so") {
            lines += ["video_source fakevideo,nil", "video_display fakevideo,nil", "video_size 320x240", "video_fps 15"]
        }
        return lines.joined(separator: "\n") + "\n"
    }

    /// Sends one command line to the `cons` module (in the lab, from a shell on its host).
    func send(_ command: String) throws {
        if let lab {
            let sent = try lab.lab.run(
                on: lab.side, URL(fileURLWithPath: "/bin/bash"),
                ["-c", "printf '%s\\n' \"$1\" >/dev/udp/127.0.0.1/\(controlPort)", "send", command], timeout: .seconds(5))
            guard sent.status == 0 else { throw InteropError("sending \(command) to baresip failed: \(sent.output)") }
            return
        }
        let fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        guard fd >= 0 else { throw InteropError("socket() failed: errno \(errno)") }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = controlPort.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bytes = Array((command + "\n").utf8)
        let sent = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                sendto(fd, bytes, bytes.count, 0, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard sent == bytes.count else { throw InteropError("sending \(command) to baresip failed: errno \(errno)") }
    }

    /// What it printed, one line per line: carriage returns split lines too (SIP lines end in CRLF), its status
    /// line (`[0:00:01] audio=0/0 (bit/s)`, rewritten in place with `\r`) and colour codes are dropped, and blank
    /// lines skipped.
    var lines: [String] {
        rawLines.map(Self.withoutColours).filter { !$0.isEmpty }
    }

    /// Its output split on `\n` and `\r`, without the status line but with the colour codes, which mark the SIP
    /// trace: `ESC[36;1m#`, the `UDP|TCP|TLS from -> to` line, the message, then `ESC[;m` alone on a line.
    private var rawLines: [String] {
        // Split on scalars: in a Swift String "\r\n" is one Character, so RunningProcess keeps CRLF lines together.
        process.lines.flatMap { $0.components(separatedBy: .newlines) }
            .map { $0.replacingOccurrences(of: Self.statusLine, with: "", options: .regularExpression) }
    }

    /// baresip's status line, `[0:00:01] audio=0/0 (bit/s)` and padding.
    private static let statusLine = #"\[\d+:\d\d:\d\d\] audio=\S+ \(bit/s\) *"#

    private static func withoutColours(_ line: String) -> String {
        line.replacingOccurrences(of: "\u{1B}\\[[0-9;]*m", with: "", options: .regularExpression)
    }

    /// The SIP messages it sent or received, in the order of its trace.
    var messages: [TracedMessage] {
        var messages: [TracedMessage] = []
        var current: [String]?
        for raw in rawLines {
            if raw.contains("\u{1B}[36;1m#") {
                current = []
            } else if raw.contains("\u{1B}[;m") {
                if let done = current, done.count >= 2 {
                    messages.append(TracedMessage(path: done[0], startLine: done[1], lines: Array(done.dropFirst(2))))
                }
                current = nil
            } else if current != nil, !raw.isEmpty {
                current?.append(Self.withoutColours(raw))
            }
        }
        return messages
    }

    private static let transcriptTitle = "--- baresip (last 120 lines) ---"

    /// The last lines it printed (and its standard error), to quote in a failure.
    var transcript: String {
        let errors = process.standardError
            .replacingOccurrences(of: Self.statusLine, with: "", options: .regularExpression)
            .trimmingCharacters(in: .whitespacesAndNewlines)
        return Self.transcriptTitle + "\n" + lines.suffix(120).joined(separator: "\n")
            + (errors.isEmpty ? "" : "\n--- its standard error ---\n" + errors)
    }

    /// Waits (polling every 20 ms) until `count` printed lines satisfy `matches`; throws, quoting its output, after
    /// `timeout`.
    func waitFor(
        count: Int = 1, timeout: Duration = .seconds(5), _ description: String, _ matches: (String) -> Bool
    ) throws {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if lines.filter(matches).count >= count { return }
            if !process.process.isRunning {
                usleep(50_000)
                if lines.filter(matches).count >= count { return }
                let status = process.process.terminationStatus
                throw InteropError("baresip exited (\(status)) before printing \(description)\n" + transcript)
            }
            usleep(20_000)
        }
        throw InteropError("baresip did not print \(description) within \(timeout)\n" + transcript)
    }

    /// Runs `body`; a thrown error gets baresip's transcript appended.
    func quotingTranscript<T>(_ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch {
            let message = "\(error)"
            throw message.contains(Self.transcriptTitle) ? error : InteropError(message + "\n" + transcript)
        }
    }

    deinit {
        // In the lab, SIGTERM alone (it quits on it): the lab may be gone already.
        if lab == nil { try? send("/quit") }
        _ = try? process.stop(timeout: .seconds(3))
        try? FileManager.default.removeItem(at: directory)
    }
}

/// One SIP message in baresip's trace.
struct TracedMessage: CustomStringConvertible {
    /// `UDP 127.0.0.1:5062 -> 127.0.0.1:5070`: the transport, the sender and the receiver.
    let path: String
    /// `INVITE sip:… SIP/2.0` or `SIP/2.0 200 OK`.
    let startLine: String
    /// The header lines and the body lines.
    let lines: [String]

    var description: String { ([path, startLine] + lines).joined(separator: "\n") }

    /// The value of the first header named `name` (case-insensitive), if any.
    func header(_ name: String) -> String? {
        for line in lines {
            guard let colon = line.firstIndex(of: ":") else { continue }
            if line[..<colon].lowercased() == name.lowercased() {
                return line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            }
        }
        return nil
    }

    /// The SDP direction attribute in the body (`sendrecv` when absent, RFC 3264), nil without a body.
    var direction: String? {
        guard lines.contains(where: { $0.hasPrefix("v=0") }) else { return nil }
        let directions = ["sendrecv", "sendonly", "recvonly", "inactive"]
        return lines.lazy.compactMap { line in directions.first { line == "a=" + $0 } }.first ?? "sendrecv"
    }
}

/// A SIP transport as the tests name it in URIs and test arguments.
enum SIPTransportName: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case udp, tcp, tls
    var testDescription: String { rawValue.uppercased() }
}

extension Parleyd {
    /// Its own address on `transport`, for a peer to call.
    func uri(_ transport: SIPTransportName) -> String {
        switch transport {
        case .udp: "sip:parley@127.0.0.1:\(port)"
        case .tcp: "sip:parley@127.0.0.1:\(port);transport=tcp"
        case .tls: "sip:parley@127.0.0.1:\(tlsPort ?? 0);transport=tls"
        }
    }

    /// Waits until a conversation entered `state` (`joined`, `paused`…) `count` times in all.
    func waitForTransition(to state: String, count: Int = 1, timeout: Duration = .seconds(5)) throws {
        try process.waitForLine(timeout: timeout, "\(count) transition(s) to \(state)") { _ in
            transitions.joined().filter { $0 == state }.count >= count
        }
    }
}

/// A self-signed certificate for "localhost" made with the openssl command in a temporary directory (removed in
/// `deinit`): the key and certificate apart for parleyd, and both in one file for baresip.
final class SelfSignedCertificate {
    let directory: URL
    var certificate: URL { directory.appending(path: "cert.pem") }
    var key: URL { directory.appending(path: "key.pem") }
    var combined: URL { directory.appending(path: "cert-and-key.pem") }
    /// The pair as `Parleyd(tls:)` takes it.
    var files: (cert: String, key: String) { (certificate.path, key.path) }

    init() throws {
        directory = FileManager.default.temporaryDirectory.appending(path: "parley-cert-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let openssl = try RunningProcess(
            try Interop.tool("openssl"),
            ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=localhost", "-days", "1",
             "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1", "-keyout", key.path, "-out", certificate.path],
            name: "openssl")
        let status = try openssl.waitForExit(timeout: .seconds(20))
        guard status == 0 else { throw InteropError("openssl req exited \(status): \(openssl.standardError)") }
        let pem = try Data(contentsOf: certificate) + Data(contentsOf: key)
        try pem.write(to: combined)
    }

    deinit {
        try? FileManager.default.removeItem(at: directory)
    }
}
