import Foundation
import Testing

/// A frontend written from docs/control-api.md alone (Tests/Frontend/frontend_check.py, Python standard library), run
/// against two real parleyd over the Unix socket and the WebSocket.
@Suite("Control API: a frontend written from the reference alone")
struct FrontendCheckTests {
    @Test("every method, event and documented error, over both transports, with two subscribed clients")
    func frontendFromTheDocument() throws {
        let workdir = FileManager.default.temporaryDirectory.appending(path: "parley-frontend-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: workdir) }
        let script = Interop.packageRoot.appending(path: "Tests/Frontend/frontend_check.py").path
        let check = try RunningProcess(
            URL(fileURLWithPath: "/usr/bin/env"),
            ["python3", script, "--parleyd", try Interop.binary("parleyd").path, "--workdir", workdir.path],
            name: "frontend_check.py")
        let status = try check.waitForExit(timeout: .seconds(120))
        let output = (check.lines + [check.standardError]).joined(separator: "\n")
        #expect(status == 0, "\(output)")
        #expect(output.contains(" checks, 0 failed"), "\(output)")
    }
}
