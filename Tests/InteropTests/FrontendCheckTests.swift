import Foundation
import Testing

/// A frontend written from docs/control-api.md alone (Tests/Frontend/frontend_check.py, Python standard library), run
/// against two real parleyd over the Unix socket and the WebSocket.
@Suite("Control API: a frontend written from the reference alone")
struct FrontendCheckTests {
    @Test("every method, event and documented error, over both transports, with two subscribed clients")
    func frontendFromTheDocument() throws {
        let (status, output) = try Interop.frontendScript(
            "frontend_check.py", ["--parleyd", try Interop.binary("parleyd").path], timeout: .seconds(120))
        #expect(status == 0, "\(output)")
        #expect(output.contains(" checks, 0 failed"), "\(output)")
    }
}
