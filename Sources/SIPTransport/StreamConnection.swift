import Foundation
import ParleyIO

/// One TCP or TLS connection of a transport, accepted or opened: what SIP needs to know about it (the peer, the local
/// end, the TLS name it was opened for) around the ParleyIO ``StreamChannel`` that does the reading, framing by
/// Content-Length, writing and TLS. Loop-confined (it lives in a `TransportCore`).
final class StreamConnection {
    /// The channel, with the transport as its delegate.
    typealias Channel = StreamChannel<TransportCore>

    let id: ConnectionID
    let kind: SIPTransportKind
    let remote: SIPPeerAddress
    /// The local end: the listener's address for accepted connections, the bound address for opened ones.
    var local: ListenAddress
    let isAccepted: Bool
    /// For opened TLS connections: the name the certificate was checked against (nil: the IP address).
    let serverName: String?
    let channel: Channel

    init(
        id: ConnectionID, kind: SIPTransportKind, remote: SIPPeerAddress, local: ListenAddress, isAccepted: Bool,
        serverName: String?, channel: Channel
    ) {
        self.id = id
        self.kind = kind
        self.remote = remote
        self.local = local
        self.isAccepted = isAccepted
        self.serverName = serverName
        self.channel = channel
    }

    /// Whether a send to `destination` may use this connection: open or on its way, and for an opened TLS connection
    /// checked against the same name.
    func canCarry(_ destination: SIPDestination) -> Bool {
        channel.isUsable && (isAccepted || kind != .tls || serverName == destination.serverName)
    }
}

extension StreamFramer: StreamCodec {
    mutating func feed(_ bytes: UnsafeRawBufferPointer) { append(bytes) }

    mutating func decode() -> Result<StreamFrame, StreamFramingError>? {
        do throws(StreamFramingError) {
            return try next().map { .success($0) }
        } catch {
            return .failure(error)
        }
    }
}

extension SocketAddress {
    /// The address as SIP names a peer.
    var peerAddress: SIPPeerAddress { SIPPeerAddress(host: ip.text, port: port) }
}
