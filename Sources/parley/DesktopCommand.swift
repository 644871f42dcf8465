import CommandLineSupport
import Foundation

/// `parley install-desktop`: makes `sip:`, `sips:`, `tel:` and `callto:` links open `parley call` (issue 49). It
/// writes the desktop entry into `$XDG_DATA_HOME/applications` (0644), refreshes that directory's MIME cache with
/// `update-desktop-database`, and makes Parley the default handler of each scheme that has none (or every scheme,
/// with `--default`) with `xdg-mime`, the freedesktop tools a desktop reads, rather than by writing `mimeapps.list`
/// itself. `packaging/org.parley.Parley.desktop` is the same entry for packages (`Exec=parley call %u`).
enum DesktopCommand {
    /// The entry's file name (its application id).
    static let fileName = "org.parley.Parley.desktop"
    /// The link schemes it handles.
    static let schemes = ["sip", "sips", "tel", "callto"]

    /// The desktop entry, running `executable` (quoted when it needs it).
    static func entry(executable: String) -> String {
        // The spec's quoting: a quoted argument escapes `"`, `` ` ``, `$` and `\` with a backslash, and the file's own
        // string escaping doubles every backslash.
        let escaped = executable.reduce(into: "") { text, character in
            if character == "\\" {
                text += "\\\\\\\\"
            } else {
                text += "\"`$".contains(character) ? "\\\\" + String(character) : String(character)
            }
        }
        let quoted = executable.contains(where: { " \t\"'\\$`".contains($0) }) ? "\"\(escaped)\"" : executable
        return """
            [Desktop Entry]
            Type=Application
            Name=Parley
            GenericName=Phone
            Comment=Call sip:, sips:, tel: and callto: links through the running parleyd
            Exec=\(quoted) call %u
            Icon=call-start
            Terminal=false
            NoDisplay=true
            Categories=Network;Telephony;
            MimeType=\(schemes.map { "x-scheme-handler/\($0);" }.joined())
            X-PulseAudio-Properties=media.role=phone

            """
    }

    static let help = """
        usage: parley install-desktop [--default] [--print [--exec COMMAND]]

        Makes sip:, sips:, tel: and callto: links open 'parley call LINK', which places the call through the
        running parleyd (its data directory as 'parley call' finds it). Writes \(fileName) into
        $XDG_DATA_HOME/applications (~/.local/share/applications), runs update-desktop-database there, and makes
        Parley the default handler (xdg-mime) of each scheme no other application handles by default.

        options:
          --default   make Parley the default handler of all four schemes, even where another application is
          --print     print the desktop entry and change nothing (--exec: the command it runs, by default this
                      parley's own path; packaging/org.parley.Parley.desktop is --print --exec parley)

        example:
          parley install-desktop && xdg-open tel:+14155550100
        """

    static func run(_ commandLine: [String]) throws -> ExitCode {
        var arguments = Arguments(commandLine)
        let takeOver = arguments.flag("--default")
        let printOnly = arguments.flag("--print")
        let executable = try arguments.option("--exec")
        guard try arguments.positionals().isEmpty else { throw UsageError("parley install-desktop takes no arguments") }
        if executable != nil && !printOnly { throw UsageError("--exec goes with --print") }
        let entry = entry(executable: executable ?? ownPath())
        if printOnly {
            print(entry, terminator: "")
            return .ok
        }
        let environment = ProcessInfo.processInfo.environment
        let dataHome = environment["XDG_DATA_HOME"].flatMap { $0.hasPrefix("/") ? $0 : nil }
            ?? (NSHomeDirectory() as NSString).appendingPathComponent(".local/share")
        let directory = (dataHome as NSString).appendingPathComponent("applications")
        let path = (directory as NSString).appendingPathComponent(fileName)
        do {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            try Data(entry.utf8).write(to: URL(fileURLWithPath: path), options: .atomic)
            try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: path)
        } catch {
            printError("parley install-desktop: cannot write \(path): \(error.localizedDescription)")
            return .failure
        }
        print("wrote \(path)")
        if run("update-desktop-database", [directory]) == nil {
            print("update-desktop-database is not installed (desktop-file-utils): desktops that read its cache may not see the entry until they rescan")
        }
        for scheme in schemes {
            let type = "x-scheme-handler/\(scheme)"
            guard let current = run("xdg-mime", ["query", "default", type]) else {
                print("xdg-mime is not installed (xdg-utils): no default handler set; your desktop's settings can pick Parley for \(scheme): links")
                break
            }
            if current == fileName {
                print("\(scheme): links open Parley")
            } else if current.isEmpty || takeOver {
                let set = run("xdg-mime", ["default", fileName, type]) != nil
                print(set ? "\(scheme): links now open Parley" : "\(scheme): xdg-mime could not make Parley the default")
            } else {
                print("\(scheme): links open \(current); 'parley install-desktop --default' makes Parley open them")
            }
        }
        return .ok
    }

    /// This program's absolute path (the entry runs this very `parley`, wherever it was built or installed).
    private static func ownPath() -> String {
        (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe"))
            ?? URL(fileURLWithPath: CommandLine.arguments[0]).standardizedFileURL.path
    }

    /// Runs `tool` (found on PATH) with `arguments`: its output trimmed, or nil when it is not there or failed.
    private static func run(_ tool: String, _ arguments: [String]) -> String? {
        let paths = (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":")
        guard let executable = paths.map({ "\($0)/\(tool)" }).first(where: { FileManager.default.isExecutableFile(atPath: $0) })
        else { return nil }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        do { try process.run() } catch { return nil }
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { return nil }
        return String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }
}
