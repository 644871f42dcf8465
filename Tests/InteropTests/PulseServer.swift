import Foundation
import Glibc
import ParleyTestSupport

/// A PulseAudio daemon for one test, in a temporary HOME and XDG_RUNTIME_DIR: no hardware, one null sink
/// (`parleytest`, the default sink, whose monitor is the default source, so what is played is captured back), an
/// anonymous Unix socket that parleyd and pactl reach through `PULSE_SERVER`. Started by the test, stopped by its PID.
final class PulseServer {
    let process: RunningProcess
    let pid: Int32
    let directory: URL
    /// The null sink's name; its monitor (`parleytest.monitor`) carries what it plays.
    static let sink = "parleytest"

    /// The echo canceller's source, made the default by `init(echoCanceller: true)`.
    static let echoCancellerSource = "parleymic.monitor.echo-cancel"

    /// A server; with `echoCanceller` also a second null sink (`parleymic`, the "microphone": module-echo-cancel takes
    /// no sink's own monitor) and module-echo-cancel on it and `parleytest`, its source the default.
    init(echoCanceller: Bool = false) throws {
        directory = FileManager.default.temporaryDirectory.appending(path: "parley-pulse-\(UUID().uuidString.prefix(8))")
        let runtime = directory.appending(path: "runtime"), home = directory.appending(path: "home")
        for folder in [runtime, home] {
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        }
        (process, pid) = try RunningProcess.shielded(
            ["/usr/bin/env", "-u", "DBUS_SESSION_BUS_ADDRESS", "HOME=\(home.path)", "XDG_RUNTIME_DIR=\(runtime.path)",
             try Interop.tool("pulseaudio").path, "-n", "--daemonize=no", "--exit-idle-time=-1", "--disable-shm=yes",
             "--use-pid-file=no", "--log-target=stderr",
             "-L", "module-native-protocol-unix socket=\(directory.path)/pulse.sock auth-anonymous=1",
             "-L", "module-null-sink sink_name=\(Self.sink) rate=48000 channels=1"],
            name: "pulseaudio")
        let deadline = ContinuousClock.now + .seconds(10)
        while (try? pactl(["info"]))?.status != 0 {
            guard ContinuousClock.now < deadline, process.process.isRunning else {
                stop()
                throw InteropError("pulseaudio did not answer pactl info within 10 s: \(process.standardError)")
            }
            usleep(50_000)
        }
        guard echoCanceller else { return }
        for arguments in [
            ["load-module", "module-null-sink", "sink_name=parleymic", "rate=48000", "channels=1"],
            ["load-module", "module-echo-cancel", "source_master=parleymic.monitor", "sink_master=\(Self.sink)", "aec_method=webrtc"],
            ["set-default-source", Self.echoCancellerSource],
        ] {
            let run = try pactl(arguments)
            guard run.status == 0 else {
                stop()
                throw InteropError("pactl \(arguments) failed (\(run.status)): \(run.output)")
            }
        }
    }

    /// `PULSE_SERVER` for programs that use this server.
    var server: String { "unix:\(directory.path)/pulse.sock" }
    var environment: [String] { ["PULSE_SERVER=\(server)"] }

    /// Runs `pactl ARGUMENTS` against this server to completion.
    func pactl(_ arguments: [String], timeout: Duration = .seconds(10)) throws -> (status: Int32, output: String) {
        let run = try RunningProcess(
            URL(fileURLWithPath: "/usr/bin/env"), environment + [try Interop.tool("pactl").path] + arguments, name: "pactl")
        let status = try run.waitForExit(timeout: timeout)
        return (status, (run.lines + [run.standardError]).joined(separator: "\n"))
    }

    /// Records `seconds` of what the null sink plays (its monitor), 8 kHz mono, with GStreamer's pulsesrc (it stops by
    /// itself after that many 10 ms buffers and completes the WAV file).
    func recordSink(seconds: Int, sink: String = PulseServer.sink) throws -> Recording {
        let file = directory.appending(path: "monitor-\(UUID().uuidString.prefix(8)).wav")
        let run = try RunningProcess(
            URL(fileURLWithPath: "/usr/bin/env"),
            environment + [try Interop.tool("gst-launch-1.0").path, "-q", "pulsesrc", "device=\(sink).monitor",
                           "buffer-time=40000", "latency-time=10000", "num-buffers=\(seconds * 100)", "!",
                           "audio/x-raw,format=S16LE,rate=8000,channels=1", "!", "wavenc", "!", "filesink", "location=\(file.path)"],
            name: "gst-launch pulsesrc")
        let status = try run.waitForExit(timeout: .seconds(Int64(seconds) + 10))
        guard status == 0 else { throw InteropError("recording the sink's monitor failed (\(status)): \(run.standardError)") }
        return try Recording(wavAt: file.path)
    }

    private var stopped = false

    /// Stops the daemon (SIGTERM by its PID; its shielding parent then exits) and removes its directory.
    func stop() {
        guard !stopped else { return }
        stopped = true
        kill(pid, SIGTERM)
        _ = try? process.waitForExit(timeout: .seconds(5))
        try? FileManager.default.removeItem(at: directory)
    }

    deinit { stop() }
}
