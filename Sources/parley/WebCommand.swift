import CommandLineSupport
import ControlProtocol
import Foundation

/// `parley web [--open]`: the address of the web softphone parleyd serves on its `--websocket` port, with the
/// token in the URL fragment (`http://127.0.0.1:PORT/#token=…`) — a fragment is never sent to a server, so the
/// token stays out of request lines and logs; the page moves it into the tab's session storage and drops it from
/// the address bar. `--open` hands the address to the desktop's browser (xdg-open) through a redirecting file in the
/// control directory (beside the token), mode 0600: a URL on a command line would show the token to every local user in
/// `ps`.
enum WebCommand {
    /// What `--json` prints.
    struct Output: Codable {
        /// The address with the token.
        var url: String
        /// Whether a browser was asked to open it.
        var opened: Bool
    }

    static func run(_ session: ControlSession, directory: String, json: Bool, open: Bool) throws -> ExitCode {
        let (_, response) = try session.request(.status, as: StatusResult.self)
        guard case .result(let status) = response else {
            if case .error(let error) = response { printError("parley web: \(ControlRendering.describe(error))") }
            return .failure
        }
        guard let page = status.daemon.webPage else {
            printError("parley web: this parleyd serves no web page: start it with --websocket 127.0.0.1:PORT")
            return .failure
        }
        let url = "\(page)#token=\(session.token)"
        var opened = false
        if open {
            opened = try openInBrowser(url, directory: directory)
            if !opened { printError("parley web: could not start xdg-open; open the address yourself") }
        }
        if json {
            print(try jsonLine(Output(url: url, opened: opened)))
        } else {
            print(url)
        }
        return open && !opened ? .failure : .ok
    }

    /// Writes web-open.html beside the token (0600: only its user can read the token in it), a page that goes on to `url`,
    /// and runs `xdg-open` on that file; false when there is no xdg-open or it failed.
    private static func openInBrowser(_ url: String, directory: String) throws -> Bool {
        let file = URL(fileURLWithPath: directory).appending(path: "web-open.html")
        let escaped = url.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "\"", with: "&quot;")
        let page = "<!doctype html><meta charset=\"utf-8\"><meta http-equiv=\"refresh\" content=\"0;url=\(escaped)\">"
            + "<title>Parley</title><a href=\"\(escaped)\">Open the Parley web softphone</a>\n"
        guard FileManager.default.createFile(atPath: file.path, contents: Data(page.utf8), attributes: [.posixPermissions: 0o600])
        else { throw ControlCommandError("cannot write \(file.path)") }
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: file.path)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["xdg-open", file.path]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        do {
            try process.run()
        } catch {
            return false
        }
        process.waitUntilExit()
        return process.terminationStatus == 0
    }
}
