import Foundation
import Glibc
import ParleyIO

/// A TCP address of the push simulator: a numeric IPv4 or IPv6 address (or `localhost`) and a port.
/// Written `127.0.0.1:5070` or `[::1]:5070`.
public struct PushEndpoint: Sendable, Hashable, CustomStringConvertible {
    /// The numeric address, IPv6 without brackets.
    public var host: String
    /// The port (0 when listening means "any free port").
    public var port: UInt16

    /// An endpoint; `host` must be a numeric IPv4 or IPv6 address (`localhost` means 127.0.0.1).
    public init?(host: String, port: UInt16) {
        let numeric = host == "localhost" ? "127.0.0.1" : host
        guard IPAddress(numeric) != nil else { return nil }
        self.host = numeric
        self.port = port
    }

    /// Parses `127.0.0.1:5070`, `[::1]:5070` or `localhost:5070`; nil for anything else.
    public init?(_ text: String) {
        let hostPart: Substring
        let portPart: Substring
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]"), text[text.index(after: close)...].hasPrefix(":") else { return nil }
            hostPart = text[text.index(after: text.startIndex)..<close]
            portPart = text[text.index(close, offsetBy: 2)...]
        } else {
            guard let colon = text.lastIndex(of: ":"), text.firstIndex(of: ":") == colon else { return nil }
            hostPart = text[..<colon]
            portPart = text[text.index(after: colon)...]
        }
        guard !portPart.isEmpty, portPart.allSatisfy(\.isASCII), portPart.allSatisfy(\.isNumber), let port = UInt16(portPart)
        else { return nil }
        self.init(host: String(hostPart), port: port)
    }

    /// Whether the address is IPv6.
    public var isIPv6: Bool { host.contains(":") }

    /// `127.0.0.1:5070`, `[::1]:5070`.
    public var description: String { isIPv6 ? "[\(host)]:\(port)" : "\(host):\(port)" }
}

/// A socket call failed.
public struct PushSocketError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What was being done: `bind 127.0.0.1:5070`, `connect [::1]:5070`.
    public var operation: String
    /// The `errno` it failed with (0 when the failure was not a system call's, e.g. a timeout).
    public var code: Int32
    /// The reason, for people.
    public var reason: String

    /// A failure of `operation` with `errno` `code`.
    public init(_ operation: String, code: Int32) {
        self.operation = operation
        self.code = code
        self.reason = IOError.text(code)
    }

    /// A failure with a reason of our own (a timeout).
    public init(_ operation: String, reason: String) {
        self.operation = operation
        self.code = 0
        self.reason = reason
    }

    /// `connect 127.0.0.1:5070: Connection refused`.
    public var description: String { "\(operation): \(reason)" }
}

extension PushEndpoint {
    /// The socket address of the endpoint (its host is numeric by construction).
    var socketAddress: SocketAddress {
        guard let ip = IPAddress(host) else { preconditionFailure("PushEndpoint holds a numeric address by construction") }
        return ip.socketAddress(port: port)
    }

    /// The endpoint of a socket address.
    init?(_ address: SocketAddress) {
        self.init(host: address.ip.text, port: address.port)
    }
}

extension PushSocketError {
    /// The I/O layer's error in the push channel's words.
    init(_ error: IOError) {
        self.init(error.operation, code: error.code)
    }
}
