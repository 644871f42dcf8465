import Glibc

/// The local address the kernel would send from toward a destination: a UDP socket connected to it (connecting a
/// datagram socket sends nothing) tells with getsockname. A node listening on every interface (`0.0.0.0`, `::`) writes
/// this address into its Via, Contact and SDP, so a peer on another host reaches it back through the interface its
/// messages came in on.
package enum RouteProbe {
    /// The address messages to `destination` leave from; nil when the kernel has no route to it.
    package static func localAddress(toward destination: IPAddress) -> IPAddress? {
        guard let fd = try? Socket.open(family: destination.family, stream: false) else { return nil }
        defer { close(fd) }
        let connected = destination.socketAddress(port: 9).withSockAddr { Glibc.connect(fd, $0, $1) } == 0
        guard connected, let local = Socket.localAddress(fd) else { return nil }
        return local.ip
    }

    /// Whether `host` names every interface (`0.0.0.0`, `::`), which is never an address to give a peer.
    package static func isWildcard(_ host: String) -> Bool {
        let bare = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
        guard let address = IPAddress(bare) else { return false }
        switch address.storage {
        case .v4(let raw): return raw == 0
        case .v6(let high, let low): return high == 0 && low == 0
        }
    }
}
