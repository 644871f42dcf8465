import Foundation
import Testing

/// Runs the built `parley` binary and captures what it prints and its exit code.
struct CLIRun {
    let status: Int32
    let stdout: String
    let stderr: String
}

/// The built `parley` binary, how to run it, and temporary files for its tests.
enum CLI {
    /// The package root (two levels above this file's folder).
    static let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent()

    /// The `parley` binary next to the test bundle (swift test builds it: the test target depends on it).
    static var binary: URL {
        get throws { try binary(named: "parley") }
    }

    /// A built executable of the package (`parley`, `parleyd`) next to the test bundle.
    static func binary(named name: String) throws -> URL {
        let beside = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        for directory in [beside, beside.deletingLastPathComponent(), packageRoot.appending(path: ".build/debug")] {
            let candidate = directory.appending(path: name)
            if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
        }
        throw CLIError.binaryNotFound(beside.path)
    }

    /// The binary was not built where the tests look.
    enum CLIError: Error { case binaryNotFound(String) }

    /// Runs `parley ARGS…` in the package root.
    static func run(_ arguments: String...) throws -> CLIRun {
        try run(arguments)
    }

    /// Runs `parley ARGS…` (or another of the package's executables) in the package root, with `environment`
    /// instead of the test's own if given.
    static func run(_ arguments: [String], environment: [String: String]? = nil, binary name: String = "parley") throws -> CLIRun {
        let process = Process()
        process.executableURL = try binary(named: name)
        process.arguments = arguments
        process.currentDirectoryURL = packageRoot
        if let environment { process.environment = environment }
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        try process.run()
        // Read before waiting so a full pipe cannot block the child.
        let stdout = out.fileHandleForReading.readDataToEndOfFile()
        let stderr = err.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return CLIRun(
            status: process.terminationStatus, stdout: String(decoding: stdout, as: UTF8.self),
            stderr: String(decoding: stderr, as: UTF8.self))
    }

    /// A new empty temporary directory; removed by the caller.
    static func temporaryDirectory() throws -> URL {
        let url = FileManager.default.temporaryDirectory.appending(path: "parley-cli-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    /// A temporary file with `contents`; removed by the caller.
    static func temporaryFile(_ contents: String, suffix: String) throws -> URL {
        let url = FileManager.default.temporaryDirectory.appending(path: "parley-cli-\(UUID().uuidString)\(suffix)")
        try contents.write(to: url, atomically: true, encoding: .utf8)
        return url
    }
}
