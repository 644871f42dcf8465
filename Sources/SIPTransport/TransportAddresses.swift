import ParleyIO
import Foundation
import Synchronization

/// The transport protocols of RFC 3261 §18 that Parley speaks.
public enum SIPTransportKind: String, Sendable, Hashable, CaseIterable {
    /// Datagrams: one message per datagram, no connection, retransmissions up to the transaction layer.
    case udp
    /// A byte stream; messages framed by Content-Length.
    case tcp
    /// TCP under TLS (the `sips:` transport); framed like TCP.
    case tls

    /// Whether the transport itself delivers reliably (RFC 3261 §17: no retransmission timers A/E/G).
    public var isReliable: Bool {
        switch self {
        case .udp: false
        case .tcp, .tls: true
        }
    }

    /// The transport token of a Via header's sent-protocol ("UDP", "TCP", "TLS").
    public var viaToken: String {
        switch self {
        case .udp: "UDP"
        case .tcp: "TCP"
        case .tls: "TLS"
        }
    }
}

/// Where a transport listens: kind, numeric IP and port, written "udp://127.0.0.1:5070" or "tcp://[::1]:5070".
public struct ListenAddress: Sendable, Hashable, CustomStringConvertible {
    /// UDP, TCP or TLS.
    public var kind: SIPTransportKind
    /// A numeric IPv4 or IPv6 address, IPv6 without brackets ("0.0.0.0" and "::" mean every interface).
    public var host: String
    /// The port; 0 asks the system to choose one (`listen` returns the chosen one).
    public var port: UInt16

    /// An address from its parts; the host is checked when the address is used.
    public init(kind: SIPTransportKind, host: String, port: UInt16) {
        self.kind = kind
        self.host = host
        self.port = port
    }

    /// Parses "scheme://host:port": scheme udp, tcp or tls; host a numeric IPv4 address or a bracketed IPv6 one;
    /// port 0–65535. IPv6 hosts are kept in their canonical form ("[0:0::1]" becomes "::1").
    public init(parsing text: String) throws(TransportError) {
        func invalid(_ reason: String) -> TransportError { .invalidListenAddress(text, reason: reason) }
        guard let separator = text.range(of: "://") else {
            throw invalid("expected scheme://host:port, for example udp://127.0.0.1:5060")
        }
        let scheme = text[..<separator.lowerBound].lowercased()
        guard let kind = SIPTransportKind(rawValue: scheme) else {
            throw invalid("unknown scheme '\(scheme)' (expected udp, tcp or tls)")
        }
        let rest = text[separator.upperBound...]
        let hostPart: Substring
        let portPart: Substring
        if rest.hasPrefix("[") {
            guard let close = rest.firstIndex(of: "]") else { throw invalid("IPv6 address without closing ']'") }
            hostPart = rest[rest.index(after: rest.startIndex)..<close]
            let afterHost = rest[rest.index(after: close)...]
            guard afterHost.hasPrefix(":") else { throw invalid("missing ':port' after the IPv6 address") }
            portPart = afterHost.dropFirst()
            guard IPAddress(hostPart).map({ $0.isIPv6 }) == true else {
                throw invalid("'\(hostPart)' is not a numeric IPv6 address")
            }
        } else {
            guard let colon = rest.lastIndex(of: ":") else { throw invalid("missing ':port'") }
            hostPart = rest[..<colon]
            portPart = rest[rest.index(after: colon)...]
            if hostPart.contains(":") { throw invalid("an IPv6 address must be written in brackets, as [::1]") }
            guard !hostPart.isEmpty else { throw invalid("missing host") }
            guard IPAddress(hostPart).map({ !$0.isIPv6 }) == true else {
                throw invalid("'\(hostPart)' is not a numeric IPv4 address (host names are not resolved here)")
            }
        }
        guard !portPart.isEmpty, portPart.utf8.count <= 5, portPart.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }),
            let port = UInt16(portPart)
        else {
            throw invalid("port '\(portPart)' is not a number from 0 to 65535")
        }
        self.init(kind: kind, host: IPAddress(hostPart)!.text, port: port)
    }

    /// "udp://127.0.0.1:5070", "tcp://[::1]:5070": the form `init(parsing:)` reads.
    public var description: String {
        "\(kind.rawValue)://\(SIPPeerAddress(host: host, port: port))"
    }
}

/// A peer's address: numeric IP and port.
public struct SIPPeerAddress: Sendable, Hashable, CustomStringConvertible {
    /// A numeric IPv4 or IPv6 address, IPv6 without brackets. Host names are resolved before they get here.
    public var host: String
    /// The port.
    public var port: UInt16

    /// An address from its parts.
    public init(host: String, port: UInt16) {
        self.host = host
        self.port = port
    }

    /// "192.0.2.1:5060" or "[2001:db8::1]:5060".
    public var description: String {
        host.utf8.contains(UInt8(ascii: ":")) ? "[\(host)]:\(port)" : "\(host):\(port)"
    }
}

/// One TCP or TLS connection of a transport, accepted or opened; unique within the process.
public struct ConnectionID: Sendable, Hashable, CustomStringConvertible {
    private static let counter = Atomic<UInt64>(0)
    let value: UInt64

    /// A fresh identifier.
    static func next() -> ConnectionID {
        ConnectionID(value: counter.add(1, ordering: .relaxed).newValue)
    }

    /// "connection#12".
    public var description: String { "connection#\(value)" }
}

/// Where to send a message: the transport, the peer, and optionally the connection to use and the TLS name.
public struct SIPDestination: Sendable, Hashable {
    /// UDP, TCP or TLS.
    public var kind: SIPTransportKind
    /// The peer's numeric address and port.
    public var address: SIPPeerAddress
    /// A connection to send on if it is still open (a response goes back on its request's connection); otherwise a
    /// live connection to `address` of `kind` is reused, or a new one opened.
    public var connection: ConnectionID?
    /// For TLS: the name to send as SNI and to check the certificate against (when verifying); nil checks `address`.
    public var serverName: String?

    /// A destination from its parts.
    public init(kind: SIPTransportKind, address: SIPPeerAddress, connection: ConnectionID? = nil, serverName: String? = nil) {
        self.kind = kind
        self.address = address
        self.connection = connection
        self.serverName = serverName
    }
}

/// One SIP message as it arrived: its bytes (exactly one message; for streams framed by Content-Length) and where
/// it came from.
public struct InboundSIPMessage: Sendable, Hashable {
    /// The message, start line to end of body; not parsed or checked beyond framing.
    public var bytes: Data
    /// The transport it came on.
    public var kind: SIPTransportKind
    /// The peer's address (for a stream, the connection's remote end).
    public var source: SIPPeerAddress
    /// The connection it came on; nil for UDP.
    public var connection: ConnectionID?
    /// The local address it arrived at: the listener's, or for an opened connection its local end.
    public var local: ListenAddress
    /// How long it waited in the kernel's receive queue before it was read: a UDP datagram's age from its arrival
    /// time (SO_TIMESTAMPNS). Nil over streams (bytes are queued, not messages) and when not known. Overload control
    /// reads it: a queue that grows is the evidence that the engine has fallen behind.
    public var waited: Duration?

    /// A message as a transport delivers it (also for feeding an engine in tests).
    public init(
        bytes: Data, kind: SIPTransportKind, source: SIPPeerAddress, connection: ConnectionID?, local: ListenAddress,
        waited: Duration? = nil
    ) {
        self.bytes = bytes
        self.kind = kind
        self.source = source
        self.connection = connection
        self.local = local
        self.waited = waited
    }

    /// Where a response goes (RFC 3261 §18.2.2, without the Via `received`/`rport` rules, which need the parsed Via):
    /// the same transport, the source address, and the same connection while it lives.
    public var replyDestination: SIPDestination {
        SIPDestination(kind: kind, address: source, connection: connection)
    }
}
