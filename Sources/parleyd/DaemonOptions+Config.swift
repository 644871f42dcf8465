import CommandLineSupport
import Foundation

extension DaemonOptions {
    /// The default config file: `$XDG_CONFIG_HOME/parley/parleyd.conf` (when absolute), else
    /// `~/.config/parley/parleyd.conf`.
    static func defaultConfigPath(environment: [String: String] = ProcessInfo.processInfo.environment) -> String {
        let base = environment["XDG_CONFIG_HOME"].flatMap { $0.hasPrefix("/") ? $0 : nil }
            ?? ((environment["HOME"].flatMap { $0.isEmpty ? nil : $0 } ?? NSHomeDirectory()) as NSString)
                .appendingPathComponent(".config")
        return ((base as NSString).appendingPathComponent("parley") as NSString).appendingPathComponent("parleyd.conf")
    }

    /// The config file's options and sections, and its path: `--config FILE`'s, else the default file when it exists
    /// (``defaultConfigPath(environment:)``), unless `--no-config`. Either one holding a password must be 0600.
    static func readConfig(_ arguments: inout Arguments) throws(UsageError) -> (ConfigFile, String?) {
        let skip = arguments.flag("--no-config")
        if let config = try arguments.option("--config") {
            guard !skip else { throw UsageError("--config FILE and --no-config exclude each other") }
            return (try configFile(config), config)
        }
        guard !skip else { return (ConfigFile(), nil) }
        let path = defaultConfigPath()
        guard FileManager.default.fileExists(atPath: path) else { return (ConfigFile(), nil) }
        return (try configFile(path, label: "the config file"), path)
    }
}
