import ConversationKit
import Foundation
import ParleyIO
import SIPMessages
import SIPSignaling
import SIPTransport

/// The addresses we give peers: in Via, Contact and From, in Call-IDs, and in SDP's o= and c= lines.
///
/// A listener on one address gives that address. A listener on every interface (`0.0.0.0`, `::`) never gives the
/// wildcard (RFC 2543 took `c=IN IP4 0.0.0.0` for hold, and a peer sends its ACK, BYE and RTP to itself): it gives
/// the address of the interface the kernel routes toward the peer (``RouteProbe``), found once per peer host. A host
/// behind a static NAT names what peers should use with `EngineConfiguration.publicAddress`, which wins over both.
///
/// Behind a NAT nobody configured, the registrar tells us how the NAT maps us (RFC 3581 `received`/`rport` in its
/// REGISTER's 2xx, learned by ``RegistrationMachine``): toward the registrar's host — the REGISTERs, and calls that
/// come or go through it — our Contact names that address and port, and our SDP that address. This is the way without
/// STUN: it counts on a NAT that keeps a socket's port (Linux MASQUERADE without random-fully, most home routers),
/// so the RTP port we name is also the NAT's, and on symmetric RTP (the peer answers our media to where it comes from).
/// ICE (RFC 8445) will replace the guess for media. Via keeps our own address: `rport` takes care of responses.
extension SIPUserAgent {
    /// The listening address for a transport kind (the first one of that kind).
    func listenAddress(for kind: SIPTransportKind) -> ListenAddress? {
        configuration.listenAddresses.first { $0.kind == kind }
    }

    /// The listening address messages to `destination` go out from: its transport, the same IP family when there is
    /// one (an IPv6 peer gets an IPv6 Via and Contact), else any of that transport.
    func listenAddress(for destination: SIPDestination) -> ListenAddress? {
        let wantsIPv6 = destination.address.host.utf8.contains(0x3A)
        return configuration.listenAddresses.first { $0.kind == destination.kind && $0.host.utf8.contains(0x3A) == wantsIPv6 }
            ?? listenAddress(for: destination.kind)
    }

    /// `host` as it goes into text of our own making, such as a Call-ID (IPv6 in brackets); SIPURI and SIPVia
    /// bracket a bare IPv6 host themselves.
    static func uriHost(_ host: String) -> String { host.utf8.contains(0x3A) && host.utf8.first != 0x5B ? "[\(host)]" : host }

    /// The address a peer at `peerHost` is given for us, when we listen on `listen`: the configured public address,
    /// else the listener's own, else (a wildcard listener) the address of the interface toward the peer. Without a
    /// numeric peer (an SDP offer not read yet), the route toward nothing is loopback's.
    func advertisedHost(toward peerHost: String?, listening listen: ListenAddress) -> String {
        if let publicAddress = configuration.publicAddress { return publicAddress }
        guard RouteProbe.isWildcard(listen.host) else { return listen.host }
        let ipv6 = listen.host.utf8.contains(0x3A)
        let loopback = ipv6 ? "::1" : "127.0.0.1"
        guard let peerHost, let peer = IPAddress(peerHost), peer.isIPv6 == ipv6, !RouteProbe.isWildcard(peerHost) else {
            return loopback
        }
        if let known = routedHosts[peerHost] { return known }
        let found = RouteProbe.localAddress(toward: peer)?.text ?? loopback
        if routedHosts.count >= Self.routedHostsLimit { routedHosts.removeAll(keepingCapacity: true) }
        routedHosts[peerHost] = found
        return found
    }

    /// Peer hosts whose route is remembered (the table starts again when full: routes are cheap to find again).
    static let routedHostsLimit = 1024

    /// The host part of Call-IDs made before any destination is known (the registration's): the public address,
    /// else the first listener's, else (a wildcard listener) a name that is no address at all.
    static func callIDHost(_ configuration: EngineConfiguration) -> String {
        let host = configuration.publicAddress ?? configuration.listenAddresses[0].host
        return RouteProbe.isWildcard(host) ? "parley.invalid" : uriHost(host)
    }

    /// Our host for messages to `destination` (bare: SIPURI and SIPVia put an IPv6 address in brackets themselves).
    func advertisedHost(for destination: SIPDestination) -> String {
        let listen = listenAddress(for: destination) ?? configuration.listenAddresses[0]
        return advertisedHost(toward: destination.address.host, listening: listen)
    }

    /// Our address as a registrar's NAT maps it, for messages to `peerHost` when that is a registrar's host, or a
    /// peer whose calls came through one (and, when given, over that registration's transport); nil when nothing
    /// was learned (no NAT, no registration there, or a configured public address). Accounts registered at one
    /// registrar share our socket, so the first one registered there speaks for all.
    func mappedAddress(toward peerHost: String?, kind: SIPTransportKind? = nil) -> SIPPeerAddress? {
        guard !accounts.isEmpty, let peerHost,
            let index = registrarAccounts[peerHost] ?? hostsThroughRegistrar[peerHost]
        else { return nil }
        let machine = accounts[index].registration
        guard let mapped = machine.mappedAddress, let registrar = machine.registrarDestination,
            kind == nil || kind == registrar.kind
        else { return nil }
        return mapped
    }

    /// An INVITE from `source` whose dialog's requests go to `peerHost` (its Contact): when it came through a
    /// registrar, the peer reaches us through it (and its NAT), so it is given the NAT's mapping of us like the
    /// registrar itself — in our 200's Contact, which the proxy forwards in-dialog requests to, and in our SDP.
    func noteCall(from peerHost: String, through source: SIPDestination) {
        guard let index = registrarAccounts[source.address.host], registrarAccounts[peerHost] == nil,
            hostsThroughRegistrar[peerHost] == nil
        else { return }
        if hostsThroughRegistrar.count >= Self.routedHostsLimit { hostsThroughRegistrar.removeAll(keepingCapacity: true) }
        hostsThroughRegistrar[peerHost] = index
    }

    /// Our Contact for messages to `destination`: ``localContact(for:secure:)``, with the NAT's mapping of us when
    /// `destination` is the registrar's host.
    func contactAddress(for destination: SIPDestination, secure: Bool = false) -> SIPAddress {
        var contact = localContact(for: destination, secure: secure)
        if let mapped = mappedAddress(toward: destination.address.host, kind: destination.kind) {
            contact.uri.host = mapped.host
            contact.uri.port = Int(mapped.port)
        }
        return contact
    }

    /// Our Contact for messages to `destination` as we see ourselves: `sip:…;transport=tcp|tls`, or a `sips:` URI
    /// when the exchange is secure end to end (a `sips:` Request-URI or target: RFC 3261 §8.1.1.8, §12.1.1). Peers
    /// such as baresip cannot send to a `sips:` Contact at all, so plain `sip:` over TLS stays `sip:`.
    func localContact(for destination: SIPDestination, secure: Bool = false) -> SIPAddress {
        let kind = destination.kind
        let listen = listenAddress(for: destination) ?? configuration.listenAddresses[0]
        var parameters: SIPParameters = []
        let sips = secure && kind == .tls
        if kind != .udp && !sips { parameters.set("transport", kind.rawValue) }
        let uri = SIPURI(
            scheme: sips ? "sips" : "sip", user: configuration.userName, host: advertisedHost(for: destination),
            port: Int(listen.port), parameters: parameters)
        return SIPAddress(uri: uri)
    }

    /// Our Contact as header text, computed once per transport, IP family, security and address we give (it goes
    /// into every provisional and final response that makes or refreshes a dialog).
    func contactHeader(for destination: SIPDestination, secure: Bool) -> String {
        let mapped = mappedAddress(toward: destination.address.host, kind: destination.kind)
        let key = ContactKey(
            kind: destination.kind, ipv6: destination.address.host.utf8.contains(0x3A), secure: secure,
            host: mapped?.description ?? advertisedHost(for: destination))
        if let cached = contactHeaders[key] { return cached }
        let value = contactAddress(for: destination, secure: secure).headerValue
        contactHeaders[key] = value
        return value
    }

    /// Our From address with `tag`, for requests to `destination` through `account`: its address of record and
    /// display name, else (no account) `sip:USER@HOST:PORT` with the port we listen on, so that a peer calling back
    /// the From reaches us (issue 41).
    /// The port is left out when it is the default, 5060 over UDP or TCP at a numeric host: the same address (RFC 3263
    /// §4.2), written as linphone expects a From (its chat room drops the port of the address it answers to, and
    /// `chat_use_call_dialogs` finds the call only when the call's remote address has none either; with any other port
    /// linphonec 5.1 sends its chat out of dialog to port 5060).
    func localAddress(tag: String?, for destination: SIPDestination, account: Account?) -> SIPAddress {
        let uri: SIPURI
        if let account {
            uri = account.addressOfRecord
        } else {
            let listen = listenAddress(for: destination) ?? configuration.listenAddresses[0]
            let host = advertisedHost(for: destination)
            let isDefaultPort = listen.port == 5060 && listen.kind != .tls && HostResolver.isLiteral(host)
            uri = SIPURI(scheme: "sip", user: configuration.userName, host: host, port: isDefaultPort ? nil : Int(listen.port))
        }
        var address = SIPAddress(displayName: account?.displayName ?? configuration.displayName, uri: uri)
        if let tag { address.parameters.set("tag", tag) }
        return address
    }

    /// Our local member handle.
    var localHandle: Handle { localHandleSnapshot }

    /// Our handle on an incoming call: the address called (its To: through a provider, our address of record, not
    /// our listener), named as we are; our listener's handle when the To is unusable.
    func localHandle(called request: SIPRequest) -> Handle {
        guard let to = request.headers.to, to.uri.isSIP else { return localHandle }
        let called = HandleMapping.handle(for: SIPAddress(uri: to.uri))
        return Handle(kind: called.kind, value: called.value, displayName: configuration.displayName ?? called.value)
    }

    /// A Via for a new client transaction going to `destination`.
    func newVia(for destination: SIPDestination) -> SIPVia {
        let listen = listenAddress(for: destination) ?? configuration.listenAddresses[0]
        return SIPVia(
            transport: destination.kind.viaToken, host: advertisedHost(for: destination), port: Int(listen.port),
            branch: SIPVia.magicCookie + SecureRandom.token(16), parameters: [SIPParameter(name: "rport")])
    }

    /// A new SDP origin: the same session, the next version, or a new session's first, at `host`.
    func nextOrigin(after previous: SDPSession?, host: String) -> SDPOrigin {
        if let previous { return previous.origin.nextVersion() }
        return SDPOrigin(username: "-", sessionID: sessionID, sessionVersion: 1, address: host)
    }

    /// Our media address as SDP writes it, for a peer at `peerHost` (its signalling or media address; nil when not
    /// known yet), whose signalling comes from `signallingHost` (when another): the NAT's mapping of us when that, or
    /// else `peerHost`, is the registrar's host.
    func mediaAddress(toward peerHost: String?, signalling signallingHost: String? = nil) -> String {
        if let mapped = mappedAddress(toward: signallingHost ?? peerHost) { return mapped.host }
        return advertisedHost(toward: peerHost, listening: configuration.listenAddresses[0])
    }
}

/// What decides our Contact: the transport, the IP family of the peer, whether the exchange is `sips:`, and the
/// address we give that peer (with the port, when it is a NAT's mapping).
struct ContactKey: Hashable {
    let kind: SIPTransportKind
    let ipv6: Bool
    let secure: Bool
    let host: String
}
