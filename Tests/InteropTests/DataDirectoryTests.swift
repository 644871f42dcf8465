import Foundation
import ParleyNode
import Testing

/// The one resolver `parley` and `parleyd` share (ParleyNode's `DataDirectory`): where the data directory is, and
/// where its control socket and token are, from the environment as a session gives it.
@Suite("DataDirectory: the data directory and the control directory")
struct DataDirectoryTests {
    let scratch = FileManager.default.temporaryDirectory.appending(path: "pd-\(UUID().uuidString.prefix(8))")

    @Test("the default data directory leaves its socket and token to $XDG_RUNTIME_DIR/parley; a named one (--data-dir, $PARLEY_DATA_DIR) keeps them; a relative or missing runtime directory is ignored")
    func resolution() throws {
        let runtime = scratch.appending(path: "run")
        try FileManager.default.createDirectory(at: runtime, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: scratch) }
        let session = ["HOME": "/home/alice", "XDG_DATA_HOME": "/home/alice/.data", "XDG_RUNTIME_DIR": runtime.path]

        let byDefault = DataDirectory.resolve(environment: session)
        #expect(byDefault.path == "/home/alice/.data/parley")
        #expect(byDefault.control.path == runtime.appending(path: "parley").path && byDefault.control.isRuntime)
        #expect(byDefault.controlSocketPath == runtime.appending(path: "parley/control.sock").path)
        #expect(byDefault.control.tokenPath == runtime.appending(path: "parley/control.token").path)
        #expect(byDefault.historyPath == "/home/alice/.data/parley/history.sqlite", "the history stays in the data directory")

        let named = DataDirectory.resolve("/srv/parley", environment: session)
        #expect(named.control.path == "/srv/parley" && !named.control.isRuntime && named.control.source == "--data-dir")
        let fromVariable = DataDirectory.resolve(environment: session.merging(["PARLEY_DATA_DIR": "/srv/p"]) { $1 })
        #expect(fromVariable.control.path == "/srv/p" && fromVariable.source == "$PARLEY_DATA_DIR")

        for ignored in ["run/user/1000", scratch.appending(path: "missing").path] {
            let without = DataDirectory.resolve(environment: session.merging(["XDG_RUNTIME_DIR": ignored]) { $1 })
            #expect(without.control.path == "/home/alice/.data/parley" && !without.control.isRuntime, "\(ignored)")
        }
        let home = DataDirectory.resolve(environment: ["HOME": "/home/bob"])
        #expect(home.path == "/home/bob/.local/share/parley" && home.control.path == home.path)
    }

    @Test("a data directory too deep for a Unix socket's path (108 bytes) does not matter when the socket is in the runtime directory")
    func deepDataDirectory() throws {
        let runtime = scratch.appending(path: "run")
        try FileManager.default.createDirectory(at: runtime, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: scratch) }
        let deep = scratch.appending(path: String(repeating: "d", count: 60)).appending(path: String(repeating: "e", count: 60))
        let resolved = DataDirectory.resolve(environment: ["HOME": "/nonexistent", "XDG_DATA_HOME": deep.path, "XDG_RUNTIME_DIR": runtime.path])
        #expect((resolved.path + "/control.sock").utf8.count > 108)
        #expect(resolved.controlSocketPath.utf8.count < 108)
    }
}
