import Foundation
import ParleyTestSupport
import Synchronization
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Paths and ports for the interop tests: the built binaries, the sipp scenarios, free loopback ports.
enum Interop {
    /// The package root.
    static let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent()
    /// The sipp scenario folder.
    static let scenarios = packageRoot.appending(path: "Tests/Interop/sipp")

    /// A built executable of this package (swift test builds it: the test target depends on it).
    static func binary(_ name: String) throws -> URL {
        let beside = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        // PARLEY_BIN_DIR runs the interop tests against other builds of the binaries (a release build's).
        let chosen = ProcessInfo.processInfo.environment["PARLEY_BIN_DIR"].map { [URL(fileURLWithPath: $0)] } ?? []
        for directory in chosen + [beside, beside.deletingLastPathComponent(), packageRoot.appending(path: ".build/debug")] {
            let candidate = directory.appending(path: name)
            if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
        }
        throw InteropError("\(name) is not built (looked beside \(beside.path))")
    }

    /// A tool installed by Scripts/bootstrap (sipp, baresip…); its absence is a failure, not a skip.
    static func tool(_ name: String) throws -> URL {
        for directory in ["/usr/bin", "/usr/local/bin", "/usr/sbin"] {
            let path = directory + "/" + name
            if FileManager.default.isExecutableFile(atPath: path) { return URL(fileURLWithPath: path) }
        }
        throw InteropError("\(name) is not installed: run Scripts/bootstrap (it installs the interop peers)")
    }

    /// Runs `python3 Tests/Frontend/SCRIPT ARGUMENTS…` with a scratch directory of its own (`--workdir`, removed
    /// after) to completion: its exit status and everything it printed.
    static func frontendScript(_ script: String, _ arguments: [String], timeout: Duration) throws -> (status: Int32, output: String) {
        let workdir = FileManager.default.temporaryDirectory.appending(path: "parley-\(script)-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: workdir) }
        let path = packageRoot.appending(path: "Tests/Frontend/\(script)").path
        let process = try RunningProcess(
            URL(fileURLWithPath: "/usr/bin/env"), ["python3", path, "--workdir", workdir.path] + arguments, name: script)
        let status = try process.waitForExit(timeout: timeout)
        return (status, (process.lines + [process.standardError]).joined(separator: "\n"))
    }

    /// A loopback port that was free a moment ago (UDP and TCP both checked).
    static func freePort() -> UInt16 { freePorts(count: 1) }

    /// The first of `count` consecutive loopback ports that were all free a moment ago (baresip, for one, listens
    /// for TLS on the port after its UDP/TCP one).
    static func freePorts(count: UInt16) -> UInt16 {
        for _ in 0..<50 {
            let first = UInt16.random(in: 20_000...59_000)
            let all = (first..<first + count).allSatisfy { LoopbackPort.isFree($0) }
            if all { return first }
        }
        fatalError("no free loopback port found")
    }
}

/// A failure of the test set-up, with its reason.
struct InteropError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// A value behind a lock, in a class so closures can share it.
final class Locked<Value: Sendable>: Sendable {
    private let mutex: Mutex<Value>
    init(_ value: Value) { mutex = Mutex(value) }
    func withLock<R>(_ body: (inout Value) -> R) -> R { mutex.withLock { body(&$0) } }
}

/// A child process whose output is collected line by line as it runs.
final class RunningProcess: @unchecked Sendable {
    // @unchecked Sendable: `process` is configured before `run()` and afterwards only read or signalled; the
    // collected output sits behind a Mutex.
    let process = Process()
    private let output = Locked<(lines: [String], partial: [UInt8])>(([], []))
    private let errors = Locked<String>("")
    /// The output pipes that reached end of file (both: everything printed has been read).
    private let closedPipes = Locked(0)
    let name: String

    init(_ executable: URL, _ arguments: [String], name: String, directory: URL? = nil) throws {
        self.name = name
        process.executableURL = executable
        process.arguments = arguments
        if let directory { process.currentDirectoryURL = directory }
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        process.standardInput = FileHandle.nullDevice
        // One thread per pipe, reading until end of file (a blocking read returns nothing only then), bytes kept
        // whole so a character split between two reads stays one character.
        Self.drain(out.fileHandleForReading, closed: closedPipes) { [output] bytes in
            output.withLock { state in
                state.partial.append(contentsOf: bytes)
                while let newline = state.partial.firstIndex(of: 0x0A) {
                    state.lines.append(String(decoding: state.partial[..<newline], as: UTF8.self))
                    state.partial.removeSubrange(...newline)
                }
            }
        }
        Self.drain(err.fileHandleForReading, closed: closedPipes) { [errors] bytes in
            errors.withLock { $0 += String(decoding: bytes, as: UTF8.self) }
        }
        try process.run()
    }

    /// Reads `handle` on a thread of its own until end of file, handing each chunk to `take`.
    private static func drain(_ handle: FileHandle, closed: Locked<Int>, _ take: @escaping @Sendable ([UInt8]) -> Void) {
        let fd = handle.fileDescriptor
        Thread.detachNewThread {
            var buffer = [UInt8](repeating: 0, count: 65_536)
            while true {
                let count = read(fd, &buffer, buffer.count)
                if count > 0 { take(Array(buffer[..<count])); continue }
                if count < 0 && errno == EINTR { continue }
                break
            }
            closed.withLock { $0 += 1 }
            _ = handle  // kept open until the end
        }
    }

    /// Every complete line printed so far.
    var lines: [String] { output.withLock { $0.lines } }
    /// What it printed on standard error so far.
    var standardError: String { errors.withLock { $0 } }

    /// Waits (polling every 20 ms) until a printed line satisfies `matches`; throws after `timeout`.
    @discardableResult
    func waitForLine(timeout: Duration = .seconds(15), _ description: String, _ matches: (String) -> Bool) throws -> String {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if let line = lines.first(where: matches) { return line }
            if !process.isRunning, let line = lines.first(where: matches) { return line }
            if !process.isRunning {
                throw InteropError("\(name) exited (\(process.terminationStatus)) before printing \(description)\n"
                    + lines.suffix(30).joined(separator: "\n") + "\n" + standardError)
            }
            usleep(20_000)
        }
        throw InteropError("\(name) did not print \(description) within \(timeout)\n"
            + lines.suffix(30).joined(separator: "\n") + "\n" + standardError)
    }

    /// Waits for the process to exit; kills it and throws after `timeout`.
    func waitForExit(timeout: Duration = .seconds(30)) throws -> Int32 {
        let deadline = ContinuousClock.now + timeout
        while process.isRunning {
            if ContinuousClock.now >= deadline {
                process.terminate()
                usleep(200_000)
                if process.isRunning { kill(process.processIdentifier, SIGKILL) }
                throw InteropError("\(name) did not exit within \(timeout)\n"
                    + lines.suffix(30).joined(separator: "\n") + "\n" + standardError)
            }
            usleep(20_000)
        }
        // Let the readability handlers take the last output: until both pipes end (a child that inherited them may
        // keep them open: then 2 s at most).
        let drained = ContinuousClock.now + .seconds(2)
        while closedPipes.withLock({ $0 }) < 2 && ContinuousClock.now < drained { usleep(5_000) }
        return process.terminationStatus
    }

    /// Sends SIGTERM (if still running) and waits for the exit.
    func stop(timeout: Duration = .seconds(10)) throws -> Int32 {
        if process.isRunning { process.terminate() }
        return try waitForExit(timeout: timeout)
    }

    deinit {
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
        }
    }
}

extension RunningProcess {
    /// Starts `command` (a path and its arguments) under a small python3 parent, for a program that closes every
    /// descriptor it inherits (Kamailio, dnsmasq): Foundation's child-exit socket among them, which would leave
    /// Foundation's reaper thread waiting on that program and blind to every other child's exit. The parent stays
    /// the direct child, holding that socket, clears the signal mask the test's threads pass on (they block SIGTERM
    /// and SIGCHLD), starts the program in a session (a process group) of its own, and says its PID, returned here
    /// for signals.
    static func shielded(_ command: [String], name: String, directory: URL? = nil) throws -> (RunningProcess, Int32) {
        let parent = """
            import signal, subprocess, sys
            signal.pthread_sigmask(signal.SIG_SETMASK, [])
            child = subprocess.Popen(sys.argv[1:], start_new_session=True)
            print("shielded pid", child.pid, flush=True)
            sys.exit(child.wait())
            """
        let process = try RunningProcess(
            URL(fileURLWithPath: "/usr/bin/python3"), ["-c", parent] + command, name: name, directory: directory)
        let announced = try process.waitForLine("its PID") { $0.hasPrefix("shielded pid ") }
        guard let pid = Int32(announced.dropFirst("shielded pid ".count)) else { throw InteropError("no PID in \(announced)") }
        return (process, pid)
    }
}
