import CommandLineSupport
import Foundation
import ICE
import ParleyNode

extension DaemonOptions {
    /// `--ice on|off`, `--stun-server HOST[:PORT]`, `--turn-server turn:HOST[:PORT][?transport=udp|tcp]`,
    /// `--turn-user NAME`, `--turn-password-file PATH` (0600): ICE for our calls' media (on by default when a STUN or
    /// TURN server is named; on alone, host candidates only). Server names are resolved once, here.
    static func ice(_ arguments: inout Arguments, media: MediaConfiguration?) throws(UsageError) -> ICEConfiguration? {
        let mode = try arguments.option("--ice")
        let stun = try arguments.option("--stun-server")
        let turn = try arguments.option("--turn-server")
        let user = try arguments.option("--turn-user")
        let passwordFile = try arguments.option("--turn-password-file")
        guard mode == nil || mode == "on" || mode == "off" else { throw UsageError("--ice expects on or off, got '\(mode!)'") }
        guard turn != nil || (user == nil && passwordFile == nil) else {
            throw UsageError("--turn-user and --turn-password-file go with --turn-server")
        }
        let named = stun != nil || turn != nil
        guard mode == "on" || (mode == nil && named) else {
            if named { throw UsageError("--stun-server and --turn-server go with ICE: drop --ice off") }
            return nil
        }
        guard media != nil else { throw UsageError("ICE needs parleyd's own media (--media gstreamer)") }
        var servers = ICEServers()
        if let stun {
            let (host, port) = try Self.hostAndPort(stun, option: "--stun-server", defaultPort: 3478)
            servers.stun = (try Self.resolve(host, option: "--stun-server"), port)
        }
        if let turn {
            let (host, port, tcp) = try Self.turnURI(turn)
            guard let user, let passwordFile else {
                throw UsageError("--turn-server needs --turn-user and --turn-password-file (a file only you may read: mode 0600)")
            }
            servers.turn = TURNServer(
                host: try Self.resolve(host, option: "--turn-server"), port: port, overTCP: tcp, user: user,
                password: try Self.secret(passwordFile, option: "--turn-password-file"))
        }
        return ICEConfiguration(servers: servers)
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
