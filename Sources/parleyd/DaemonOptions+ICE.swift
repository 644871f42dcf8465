import CommandLineSupport
import Foundation
import ICE
import ParleyNode

/// The ICE options as given, before they mean anything: the node's (`--ice`, `--stun-server`…) or one account's
/// (`ice`, `stun-server`… in its config-file section). Errors name the options with `--`; a section's have it taken off.
struct ICEOptions {
    /// `on`, `off`, or nil: not said.
    var mode: String?
    /// The STUN server, `HOST[:PORT]`.
    var stun: String?
    /// The TURN server, `turn:HOST[:PORT][?transport=udp|tcp]`.
    var turn: String?
    /// The TURN user name.
    var user: String?
    /// The file the TURN password is read from (it must be 0600).
    var passwordFile: String?

    /// Takes the ICE options out of `arguments`.
    init(_ arguments: inout Arguments) throws(UsageError) {
        mode = try arguments.option("--ice")
        stun = try arguments.option("--stun-server")
        turn = try arguments.option("--turn-server")
        user = try arguments.option("--turn-user")
        passwordFile = try arguments.option("--turn-password-file")
        guard mode == nil || mode == "on" || mode == "off" else { throw UsageError("--ice expects on or off, got '\(mode!)'") }
    }

    /// Whether a STUN or TURN server is named.
    var namesServer: Bool { stun != nil || turn != nil }
    /// Whether anything is said of ICE.
    var isEmpty: Bool { mode == nil && !namesServer && user == nil && passwordFile == nil }
}

extension DaemonOptions {
    /// `--ice on|off`, `--stun-server HOST[:PORT]`, `--turn-server turn:HOST[:PORT][?transport=udp|tcp]`,
    /// `--turn-user NAME`, `--turn-password-file PATH` (0600): ICE for our calls' media (on by default when a STUN or
    /// TURN server is named; on alone, host candidates only). Server names are resolved once, here.
    static func ice(_ arguments: inout Arguments, media: MediaConfiguration?) throws(UsageError) -> ICEConfiguration? {
        let given = try ICEOptions(&arguments)
        guard given.turn != nil || (given.user == nil && given.passwordFile == nil) else {
            throw UsageError("--turn-user and --turn-password-file go with --turn-server")
        }
        guard given.mode == "on" || (given.mode == nil && given.namesServer) else {
            if given.namesServer { throw UsageError("--stun-server and --turn-server go with ICE: drop --ice off") }
            return nil
        }
        guard media != nil else { throw UsageError("ICE needs parleyd's own media (--media gstreamer)") }
        var servers = ICEServers()
        if let stun = given.stun { servers.stun = try Self.stunServer(stun) }
        if let turn = given.turn { servers.turn = try Self.turnServer(turn, user: given.user, passwordFile: given.passwordFile) }
        return ICEConfiguration(servers: servers)
    }

    /// One account's ICE (`ice`, `stun-server`, `turn-server`, `turn-user`, `turn-password-file` in its section), over
    /// the node's `node` (nil: the node has none); nil when the section says nothing of ICE (the node's apply).
    ///
    /// `ice off` turns ICE off for the account's calls, even when the node has it (a server named beside it is a
    /// mistake). Anything else turns it on, even when the node has none: `ice on` alone, or a server named (why name
    /// one otherwise?). What the section does not name comes from the node: its STUN server, its TURN server. TURN
    /// credentials go with a TURN server: a section's `turn-server` needs its own `turn-user` and `turn-password-file`;
    /// a section giving only those uses them at the node's TURN server (one server, a user per account).
    static func accountICE(_ arguments: inout Arguments, node: ICEConfiguration?, media: MediaConfiguration?)
        throws(UsageError) -> AccountICE?
    {
        let given = try ICEOptions(&arguments)
        if given.isEmpty { return nil }
        if given.mode == "off" {
            guard !given.namesServer, given.user == nil, given.passwordFile == nil else {
                throw UsageError("--ice off takes no --stun-server, --turn-server or TURN credentials: drop --ice off, or them")
            }
            return .off
        }
        guard media != nil else { throw UsageError("ICE needs parleyd's own media (--media gstreamer)") }
        guard (given.user == nil) == (given.passwordFile == nil) else {
            throw UsageError("--turn-user and --turn-password-file go together (the account's TURN credentials)")
        }
        var settings = node ?? ICEConfiguration()
        if let stun = given.stun { settings.servers.stun = try Self.stunServer(stun) }
        if let turn = given.turn {
            settings.servers.turn = try Self.turnServer(turn, user: given.user, passwordFile: given.passwordFile)
        } else if let user = given.user, let passwordFile = given.passwordFile {
            guard var turn = node?.servers.turn else {
                throw UsageError("--turn-user and --turn-password-file go with a TURN server: the account's --turn-server, or the node's")
            }
            turn.user = user
            turn.password = try Self.secret(passwordFile, option: "--turn-password-file")
            settings.servers.turn = turn
        }
        return .on(settings)
    }

    /// `--stun-server HOST[:PORT]`, resolved.
    static func stunServer(_ text: String) throws(UsageError) -> (host: String, port: Int) {
        let (host, port) = try Self.hostAndPort(text, option: "--stun-server", defaultPort: 3478)
        return (try Self.resolve(host, option: "--stun-server"), port)
    }

    /// `--turn-server turn:…` resolved, with its user and the password read from `passwordFile` (both required).
    static func turnServer(_ text: String, user: String?, passwordFile: String?) throws(UsageError) -> TURNServer {
        let (host, port, tcp) = try Self.turnURI(text)
        guard let user, let passwordFile else {
            throw UsageError("--turn-server needs --turn-user and --turn-password-file (a file only you may read: mode 0600)")
        }
        return TURNServer(
            host: try Self.resolve(host, option: "--turn-server"), port: port, overTCP: tcp, user: user,
            password: try Self.secret(passwordFile, option: "--turn-password-file"))
    }

    /// `turn:HOST[:PORT][?transport=udp|tcp]` (RFC 7065; `turns:` is not carried).
    static func turnURI(_ text: String) throws(UsageError) -> (host: String, port: Int, tcp: Bool) {
        let usage = "--turn-server expects turn:HOST[:PORT][?transport=udp|tcp], got '\(text)'"
        guard text.hasPrefix("turn:") else { throw UsageError(usage) }
        let parts = text.dropFirst("turn:".count).split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)
        var tcp = false
        if parts.count == 2 {
            switch parts[1] {
            case "transport=udp": tcp = false
            case "transport=tcp": tcp = true
            default: throw UsageError(usage)
            }
        }
        let (host, port) = try hostAndPort(String(parts[0]), option: "--turn-server", defaultPort: 3478)
        return (host, port, tcp)
    }

    /// `HOST[:PORT]` or `[IPv6][:PORT]`.
    static func hostAndPort(_ text: String, option: String, defaultPort: Int) throws(UsageError) -> (String, Int) {
        var host = Substring(text), port: Substring?
        if text.hasPrefix("["), let close = text.firstIndex(of: "]") {
            host = text[text.index(after: text.startIndex)..<close]
            let rest = text[text.index(after: close)...]
            if !rest.isEmpty {
                guard rest.hasPrefix(":") else { throw UsageError("\(option) expects HOST[:PORT], got '\(text)'") }
                port = rest.dropFirst()
            }
        } else if let colon = text.lastIndex(of: ":"), text.filter({ $0 == ":" }).count == 1 {
            (host, port) = (text[..<colon], text[text.index(after: colon)...])
        }
        guard !host.isEmpty else { throw UsageError("\(option) expects HOST[:PORT], got '\(text)'") }
        guard let number = port.map({ Int($0) }) ?? defaultPort, (1...65_535).contains(number) else {
            throw UsageError("\(option) expects a port of 1–65535, got '\(text)'")
        }
        return (String(host), number)
    }

    /// A numeric address for `host` (libnice takes no names): the system resolver's first IPv4 one, else its first
    /// (libnice asks a server of our candidates' family only, and most are IPv4).
    static func resolve(_ host: String, option: String) throws(UsageError) -> String {
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_DGRAM.rawValue)
        var found: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host, nil, &hints, &found) == 0, var first = found else {
            throw UsageError("\(option): cannot resolve \(host)")
        }
        defer { freeaddrinfo(found) }
        var next: UnsafeMutablePointer<addrinfo>? = first
        while let entry = next {
            if entry.pointee.ai_family == AF_INET {
                first = entry
                break
            }
            next = entry.pointee.ai_next
        }
        var text = [CChar](repeating: 0, count: Int(NI_MAXHOST))
        guard getnameinfo(first.pointee.ai_addr, first.pointee.ai_addrlen, &text, socklen_t(text.count), nil, 0, NI_NUMERICHOST) == 0
        else { throw UsageError("\(option): cannot resolve \(host)") }
        return String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// A secret from a file only its owner may read, alone on its one line.
    static func secret(_ path: String, option: String) throws(UsageError) -> String {
        try requirePrivate(path, what: option)
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { throw UsageError("\(option) \(path): cannot read the file") }
        let secret = text.hasSuffix("\n") ? String(text.dropLast()).replacingOccurrences(of: "\r", with: "") : text
        guard !secret.isEmpty, !secret.contains("\n") else {
            throw UsageError("\(option) \(path): the file must hold the password alone, on one line")
        }
        return secret
    }
}
