import Foundation
import Testing

/// `Scripts/check-sources` against a copy of the tree with one rule broken at a time: it must fail, naming the file
/// and the rule, and pass again on the untouched copy.
@Suite("Scripts/check-sources")
struct CheckSourcesTests {
    /// A copy of Sources, docs and the script in a temporary directory.
    final class Tree {
        let root: URL

        init() throws {
            root = try CLI.temporaryDirectory()
            let manager = FileManager.default
            try manager.createDirectory(at: root.appending(path: "Scripts"), withIntermediateDirectories: true)
            for item in ["Sources", "docs", "Scripts/check-sources"] {
                try manager.copyItem(at: CLI.packageRoot.appending(path: item), to: root.appending(path: item))
            }
            try manager.createDirectory(at: root.appending(path: "Tests"), withIntermediateDirectories: true)
        }

        deinit { try? FileManager.default.removeItem(at: root) }

        func write(_ text: String, to path: String) throws {
            let url = root.appending(path: path)
            try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
            try text.write(to: url, atomically: true, encoding: .utf8)
        }

        /// Runs the script; its exit status and what it printed on standard error.
        func check() throws -> (status: Int32, errors: String) {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/bin/bash")
            process.arguments = [root.appending(path: "Scripts/check-sources").path]
            let err = Pipe()
            process.standardError = err
            process.standardOutput = Pipe()
            try process.run()
            let errors = err.fileHandleForReading.readDataToEndOfFile()
            process.waitUntilExit()
            return (process.terminationStatus, String(decoding: errors, as: UTF8.self))
        }
    }

    @Test("the tree as it is passes")
    func passes() throws {
        #expect(try Tree().check().status == 0)
    }

    @Test("an import across the documented arrows fails, naming the file and what the module may import")
    func badImport() throws {
        let tree = try Tree()
        try tree.write("import SIPTransport\n\nenum Leak {}\n", to: "Sources/ConversationKit/Leak.swift")
        let result = try tree.check()
        #expect(result.status == 1)
        #expect(result.errors.contains("Sources/ConversationKit/Leak.swift:1 imports SIPTransport"))
        #expect(result.errors.contains("lets ConversationKit import only"))

        let upward = try Tree()
        try upward.write("import ParleyEngine\n", to: "Sources/SIPTransport/Upward.swift")
        #expect(try upward.check().errors.contains("Sources/SIPTransport/Upward.swift:1 imports ParleyEngine"))
    }

    @Test("a pure module may not import Glibc; a C library has one importer; every module is in the table")
    func pureAndCModules() throws {
        let tree = try Tree()
        try tree.write("import Glibc\n", to: "Sources/SIPSignaling/Impure.swift")
        try tree.write("import COpenSSL\n", to: "Sources/SIPTransport/Crypto.swift")
        try tree.write("enum New {}\n", to: "Sources/Unlisted/New.swift")
        let errors = try tree.check().errors
        #expect(errors.contains("Sources/SIPSignaling/Impure.swift:1 imports Glibc"))
        #expect(errors.contains("Sources/SIPTransport/Crypto.swift:1 imports COpenSSL"))
        #expect(errors.contains("module Unlisted is not in the import table"))
    }

    @Test("nonisolated(unsafe) and @unchecked Sendable need a comment that proves them safe")
    func unsafeNeedsReason() throws {
        let tree = try Tree()
        try tree.write("enum Shared {\n    nonisolated(unsafe) static var count = 0\n}\n", to: "Sources/ConversationKit/Shared.swift")
        let errors = try tree.check().errors
        #expect(errors.contains("Sources/ConversationKit/Shared.swift:2: @unchecked Sendable or nonisolated(unsafe) without a comment"))
    }
}
