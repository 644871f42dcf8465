import Glibc
import ParleyIO

/// What went wrong in the transport: a bad setting of ours, a refusal of the system, or a peer's fault.
public enum TransportError: Error, Sendable, Hashable, CustomStringConvertible {
    /// A listen address that does not parse or name a numeric IP (the text, and why).
    case invalidListenAddress(String, reason: String)
    /// bind(2) failed: address in use, not on this machine, permission (errno kept).
    case bindFailed(ListenAddress, code: Int32)
    /// A destination whose host is not a numeric IP address.
    case invalidDestination(SIPPeerAddress)
    /// TLS was asked for but the transport has no TLSConfiguration.
    case tlsNotConfigured
    /// A TLS server needs both a certificate and a private key.
    case tlsCertificateMissing
    /// A PEM file could not be used: which file, and OpenSSL's reason.
    case tlsFile(path: String, reason: String)
    /// The private key does not belong to the certificate.
    case tlsKeyMismatch(certificatePath: String, privateKeyPath: String)
    /// The TLS handshake with a peer failed; a certificate verification failure says so in `reason`.
    case tlsHandshakeFailed(SIPPeerAddress, reason: String)
    /// connect(2) failed or the connection was refused or reset before the message was written.
    case connectionFailed(SIPPeerAddress, code: Int32)
    /// The connection closed (by the peer, a framing error, idleness or `close()`) with the message still queued.
    case connectionClosed(SIPPeerAddress)
    /// A datagram to the address drew an ICMP error (port unreachable: nobody listens there; host or network
    /// unreachable), or the local stack refused it.
    case unreachable(SIPPeerAddress, code: Int32)
    /// The connection's write queue passed its bound, so it was closed.
    case queueOverflow(SIPPeerAddress)
    /// UDP datagrams sent from a thread of their own: `maxQueuedDatagrams` were already waiting for it, so this one
    /// was dropped.
    case sendQueueFull(SIPPeerAddress)
    /// `maxConnections` are open; no new connection was made.
    case tooManyConnections(limit: Int)
    /// The transport (or its loop) was closed.
    case transportClosed
    /// Another system call failed (errno kept).
    case system(operation: String, code: Int32)

    /// One line in plain words.
    public var description: String {
        switch self {
        case .invalidListenAddress(let text, let reason):
            "invalid listen address '\(text)': \(reason)"
        case .bindFailed(let address, let code):
            switch code {
            case EADDRINUSE: "cannot listen on \(address): address already in use"
            case EADDRNOTAVAIL: "cannot listen on \(address): address not available on this machine"
            case EACCES: "cannot listen on \(address): permission denied (ports below 1024 need privileges)"
            default: "cannot listen on \(address): \(Self.systemMessage(code))"
            }
        case .invalidDestination(let address):
            "cannot send to \(address): the host is not a numeric IP address"
        case .tlsNotConfigured:
            "TLS is not configured for this transport"
        case .tlsCertificateMissing:
            "a TLS listener needs certificatePath and privateKeyPath"
        case .tlsFile(let path, let reason):
            "TLS file '\(path)' could not be used: \(reason)"
        case .tlsKeyMismatch(let certificatePath, let privateKeyPath):
            "the private key '\(privateKeyPath)' does not match the certificate '\(certificatePath)'"
        case .tlsHandshakeFailed(let address, let reason):
            "TLS handshake with \(address) failed: \(reason)"
        case .connectionFailed(let address, let code):
            "connection to \(address) failed: \(Self.systemMessage(code))"
        case .connectionClosed(let address):
            "connection to \(address) closed before the message was sent"
        case .unreachable(let address, let code) where code == ECONNREFUSED:
            "nobody is listening at udp \(address) (ICMP port unreachable)"
        case .unreachable(let address, let code):
            "udp \(address) is unreachable: \(Self.systemMessage(code))"
        case .queueOverflow(let address):
            "connection to \(address) closed: its write queue overflowed"
        case .sendQueueFull(let address):
            "datagram to \(address) dropped: the UDP send queue is full"
        case .tooManyConnections(let limit):
            "no new connection: \(limit) connections are open (the limit)"
        case .transportClosed:
            "the transport is closed"
        case .system(let operation, let code):
            "\(operation) failed: \(Self.systemMessage(code))"
        }
    }

    static func systemMessage(_ code: Int32) -> String {
        guard let text = strerror(code) else { return "errno \(code)" }
        return "\(String(cString: text)) (errno \(code))"
    }
}

extension TransportError {
    /// A failed system call of the I/O layer.
    static func system(_ error: IOError) -> TransportError { .system(operation: error.operation, code: error.code) }

    /// A TLS set-up failure in the transport's words.
    init(_ error: TLSError) {
        switch error {
        case .certificateMissing: self = .tlsCertificateMissing
        case .file(let path, let reason): self = .tlsFile(path: path, reason: reason)
        case .keyMismatch(let certificatePath, let privateKeyPath):
            self = .tlsKeyMismatch(certificatePath: certificatePath, privateKeyPath: privateKeyPath)
        case .uncheckableName(let name):
            self = .tlsHandshakeFailed(SIPPeerAddress(host: name, port: 0), reason: "cannot check the certificate for '\(name)'")
        case .system(let failure): self = .system(failure)
        }
    }

    /// Runs `body`, turning its TLS error into the transport's.
    static func catching<Value>(_ body: () throws(TLSError) -> Value) throws(TransportError) -> Value {
        do {
            return try body()
        } catch {
            throw TransportError(error)
        }
    }

    /// Runs `body`, turning its I/O error into the transport's.
    static func catching<Value>(_ body: () throws(IOError) -> Value) throws(TransportError) -> Value {
        do {
            return try body()
        } catch {
            throw .system(error)
        }
    }
}
