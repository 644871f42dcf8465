import Foundation
import SIPMessages
import SIPTransport

/// Where out-of-dialog requests go: the outbound proxy when there is one (RFC 3261 §8.1.2: a pre-loaded Route),
/// else the request URI's host; a host name is located (RFC 3263) without blocking the loop, and its targets are
/// kept in failover order: a target that did not answer (timer B or F, an ICMP error) goes to the back.
extension SIPUserAgent {
    /// The outbound proxy of requests through `account` (its own, else the engine's), or of requests through none.
    func outboundProxy(through account: Account?) -> SIPURI? {
        account?.outboundProxy ?? configuration.outboundProxy
    }

    /// The URI whose host out-of-dialog requests for `uri` through `account` are sent to: the outbound proxy, else
    /// `uri`.
    func nextHop(for uri: SIPURI, through account: Account?) -> SIPURI {
        outboundProxy(through: account) ?? uri
    }

    /// The Route header value out-of-dialog requests through `account` carry when they go through an outbound proxy
    /// (`<sip:proxy;lr>`), nil without one.
    func preloadedRoute(through account: Account?) -> String? {
        guard var proxy = outboundProxy(through: account) else { return nil }
        if proxy.parameters["lr"] == nil { proxy.parameters.append(SIPParameter(name: "lr", value: nil)) }
        return "<\(proxy)>"
    }

    /// Where an out-of-dialog request for `uri` through `account` goes now (the next hop's first target), from what
    /// was located.
    func outOfDialogDestination(for uri: SIPURI, through account: Account?) -> Result<SIPDestination, HandleDialError> {
        destination(for: nextHop(for: uri, through: account))
    }

    /// Locates `uri`'s host and hands its targets (at least one) to `body`, or why there are none: at once for a
    /// numeric host, on a later turn for a name (through the locator).
    func locate(_ uri: SIPURI, then body: @escaping (Result<[SIPDestination], HandleDialError>) -> Void) {
        let kind: SIPTransportKind?
        switch transportKind(of: uri) {
        case .success(let found): kind = found
        case .failure(let problem): return body(.failure(problem))
        }
        let host = Self.bareHost(uri.host)
        if HostResolver.isLiteral(host) { return body(destination(for: uri).map { [$0] }) }
        guard let locator else { return body(.failure(HandleDialError("cannot resolve host \(host): no DNS resolver"))) }
        let request = SIPServerRequest(host: host, port: uri.port, transport: kind, secure: uri.scheme == "sips")
        let running = [SIPTransportKind.tls, .tcp, .udp].filter { listenAddress(for: $0) != nil }
        locator.locate(request, transports: running) { [weak self] result in
            guard let self else { return }
            switch result {
            case .success(let found):
                let usable = found.filter { self.listenAddress(for: $0.kind) != nil }.map {
                    SIPDestination(kind: $0.kind, address: $0.address, serverName: host)
                }
                guard !usable.isEmpty else {
                    return body(.failure(HandleDialError("\(host) has no SIP server over a transport this parleyd runs")))
                }
                // The same targets again (the resolver's cache): the order failures gave them is kept.
                if let known = self.located[request], Set(known) == Set(usable) { return body(.success(known)) }
                if self.located.count >= Self.maxLocatedHosts { self.located.removeAll() }
                self.located[request] = usable
                body(.success(usable))
            case .failure(let error):
                body(.failure(HandleDialError(error.description)))
            }
        }
    }

    /// `uri`'s next target failed to answer (`failed`): it goes to the back of the located targets, so that the next
    /// attempt (a REGISTER retried) tries the one after it. A numeric host has no other.
    func targetFailed(_ failed: SIPDestination, of uri: SIPURI) {
        guard let request = locationRequest(for: uri), var targets = located[request], targets.count > 1,
            let index = targets.firstIndex(where: { $0.address == failed.address && $0.kind == failed.kind })
        else { return }
        targets.append(targets.remove(at: index))
        located[request] = targets
    }

    /// The location request of a URI with a host name (nil for a numeric host or an unusable transport).
    func locationRequest(for uri: SIPURI) -> SIPServerRequest? {
        let host = Self.bareHost(uri.host)
        guard !HostResolver.isLiteral(host), case .success(let kind) = transportKind(of: uri) else { return nil }
        return SIPServerRequest(host: host, port: uri.port, transport: kind, secure: uri.scheme == "sips")
    }

    /// The transport a URI asks for (`;transport=`, `sips:` → TLS), nil when it names none; an error when parleyd
    /// does not run it.
    func transportKind(of uri: SIPURI) -> Result<SIPTransportKind?, HandleDialError> {
        let kind: SIPTransportKind?
        switch uri.transport?.lowercased() {
        case nil: kind = uri.scheme == "sips" ? .tls : nil
        case "udp": kind = .udp
        case "tcp": kind = uri.scheme == "sips" ? .tls : .tcp
        case "tls": kind = .tls
        case let other?:
            return .failure(HandleDialError(DialTarget.transportProblem(other)?.message ?? "transport \(other) is not supported"))
        }
        if let kind, listenAddress(for: kind) == nil {
            return .failure(HandleDialError("no \(kind.rawValue) listener to send from (add --listen \(kind.rawValue)://…)"))
        }
        return .success(kind)
    }

    /// Host names whose targets are kept at most (each one dialled is kept; beyond, all are forgotten and located
    /// again as needed: the resolver's cache keeps the answers).
    static let maxLocatedHosts = 1_024

    /// A host without IPv6 brackets.
    static func bareHost(_ host: String) -> String {
        host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
    }
}
