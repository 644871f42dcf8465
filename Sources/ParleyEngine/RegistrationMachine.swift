import Foundation
import ParleyIO
import SIPMessages
import SIPSignaling
import SIPTransport

/// One REGISTER the registration sent: the request (a challenge to it is answered from it) and the lifetime it asked
/// for (0 removes our binding).
package struct RegistrationAttempt: Equatable {
    package let request: SIPRequest
    package let expires: Int
}

/// What the registration asks of the world while it decides: where the registrar is, how our Contact and Via look,
/// the time, a fresh cnonce and the digest hash. Queries and builders only (a registrar's host name is located before
/// the machine runs: nothing here waits for DNS); ``SIPUserAgent`` is the context.
package protocol RegistrationContext {
    var configuration: EngineConfiguration { get }
    var now: Date { get }
    /// Where a REGISTER to the registrar `uri` goes: the outbound proxy when there is one, else the registrar (a host
    /// name as located before the registration ran: RFC 3263).
    func outOfDialogDestination(for uri: SIPURI) -> Result<SIPDestination, HandleDialError>
    /// The Route header of out-of-dialog requests (`<sip:proxy;lr>`), nil without an outbound proxy.
    var preloadedRoute: String? { get }
    /// Our Contact toward `destination` as we see ourselves (the listener's, the public or the routed address; not
    /// a NAT's mapping, which the machine applies itself).
    func localContact(for destination: SIPDestination, secure: Bool) -> SIPAddress
    func newVia(for destination: SIPDestination) -> SIPVia
    /// A fresh client nonce for a digest answer.
    func cnonce() -> String
    /// The digest of a text with an algorithm (through OpenSSL).
    var digestHash: DigestHash { get }
}

/// REGISTER as a client (RFC 3261 §10), as a pure state machine: challenge and answer (RFC 2617, 7616, 8760),
/// refresh before expiry, back-off after failures, unregister on shutdown. One Call-ID and a growing CSeq for all
/// REGISTERs (§10.2.4). ``SIPUserAgent`` drives it: it sends the REGISTERs, runs the one timer, and feeds back
/// what the transaction layer says.
///
/// Behind a NAT (RFC 3581): every Via asks for `rport`, so the registrar's 2xx says in its top Via (`received`,
/// `rport`) where our REGISTER came from. When that is not what our Contact said, a NAT mapped us: the machine takes
/// the mapping as our address toward the registrar (``mappedAddress``) and registers again at once with a Contact
/// naming it, removing the binding under the old one (expires 0) in the same REGISTER. A configured public address
/// wins: nothing is learned then.
///
/// ```
///  unregistered ─start─▶ registering ─2xx─▶ registered ─refresh timer─▶ registering
///                          │  ▲   │ 401/407 (answered once per nonce)       │
///                          │  └───┘ 423 (again with Min-Expires)            │ unregister (expires 0, any answer)
///                          │  ▲                                             ▼
///                          │  └── 2xx whose Via received/rport ≠ our Contact: a new mapping (at once)
///                          ▼                                                        unregistered
///                        failed ──retry timer (5 s doubling to 5 min)──▶ registering
/// ```
package struct RegistrationMachine {
    /// What the driver does.
    package enum Effect: Equatable {
        /// Send a REGISTER in a client transaction; its events come back tagged with the attempt.
        case send(SIPRequest, RegistrationAttempt, to: SIPDestination)
        /// (Re)start the registration's timer: the refresh, or the retry after a failure.
        case startTimer(after: Duration)
        /// Stop it.
        case cancelTimer
        /// A line for the log.
        case log(EngineLog.Level, String)
    }

    let configuration: RegistrationConfiguration
    let callID: String
    let localTag: String
    /// Where the registration stands.
    package private(set) var state: RegistrationState = .unregistered
    private var cseq: UInt32 = 0
    private var digest = DigestSession()
    /// Challenges already answered with these nonces (a second challenge with the same nonce means wrong credentials).
    private var answeredNonces: Set<String> = []
    /// Consecutive failures, for the back-off.
    private var failures = 0
    /// Our address and port as the registrar saw our last REGISTER, when a NAT changed them from what our Contact
    /// said (RFC 3581 `received`/`rport` in its 2xx): what our Contact names from then on, and what the driver gives
    /// peers reached through the registrar. Nil when nothing changed us, or with a configured public address.
    package private(set) var mappedAddress: SIPPeerAddress?
    /// Where the REGISTERs go (the registrar, resolved), once one went.
    package private(set) var registrarDestination: SIPDestination?
    /// Bindings to remove with the next REGISTER (expires 0): the Contact we gave before a mapping was learned.
    private var staleContacts: [SIPAddress] = []

    package init(configuration: RegistrationConfiguration, callID: String, localTag: String) {
        self.configuration = configuration
        self.callID = callID
        self.localTag = localTag
    }

    /// How long to wait before retrying after `failures` failures: 5 s doubling to 5 minutes.
    var retryDelay: Duration { .seconds(min(300, 5 << min(max(failures - 1, 0), 6))) }

    /// When to refresh a binding granted for `seconds`: halfway for short bindings, else 32 s before expiry; at
    /// least a second from now.
    static func refreshDelay(grantedSeconds seconds: Int) -> Duration {
        let refresh = seconds > 64 ? seconds - 32 : seconds / 2
        return .seconds(max(1, refresh))
    }

    // MARK: Inputs

    /// Registers (or refreshes) now: the start, and the timer.
    package mutating func register(in context: some RegistrationContext) -> [Effect] {
        answeredNonces = []
        return [.cancelTimer] + send(expires: configuration.expires, authorization: nil, in: context)
    }

    /// Removes our binding (REGISTER with expires 0), on shutdown; nothing unless registered.
    mutating func unregister(in context: some RegistrationContext) -> [Effect] {
        guard case .registered = state else { return [] }
        answeredNonces = []
        return [.cancelTimer] + send(expires: 0, authorization: nil, in: context)
    }

    /// What the REGISTER's transaction said.
    package mutating func receive(
        _ event: ClientTransactionEvent, for attempt: RegistrationAttempt, in context: some RegistrationContext
    ) -> [Effect] {
        let expires = attempt.expires
        if expires == 0, case .response(let response) = event, response.statusCode == 401 || response.statusCode == 407 {
            return answerChallenge(response, attempt: attempt, in: context)
        }
        if expires == 0, !event.isProvisional {
            // Unregistering on the way out: whatever the answer, nothing is retried.
            state = .unregistered
            return [.log(.info, "registration: removed our binding at \(configuration.registrar) (\(event.summary))")]
        }
        switch event {
        case .response(let response) where response.isProvisional:
            return []
        case .response(let response) where response.isSuccess:
            let granted = Self.grantedExpiry(response, requested: expires, contact: attempt.request.headers.contacts.first?.uri)
            failures = 0
            if attempt.request.headers.contacts.count > 1 { staleContacts = [] }  // removed with this REGISTER
            if context.configuration.publicAddress == nil, let kind = registrarDestination?.kind,
                let mapped = Self.mapping(in: response, sentContact: attempt.request.headers.contacts.first, kind: kind),
                mapped != mappedAddress
            {
                return remap(to: mapped, sent: attempt.request, granted: granted, in: context)
            }
            state = .registered(
                until: context.now.addingTimeInterval(TimeInterval(granted)), mappedAddress: mappedAddress?.description)
            let seen = mappedAddress.map { " as \($0) (a NAT's mapping)" } ?? ""
            return [
                .startTimer(after: Self.refreshDelay(grantedSeconds: granted)),
                .log(.info, "registration: registered \(configuration.addressOfRecord) for \(granted) s\(seen)"),
            ]
        case .response(let response) where response.statusCode == 401 || response.statusCode == 407:
            return answerChallenge(response, attempt: attempt, in: context)
        case .response(let response) where response.statusCode == 423:
            // Interval Too Brief: ask again with the registrar's minimum (RFC 3261 §10.2.8).
            let minimum = response.headers["Min-Expires"].flatMap { Int($0.trimmingCharacters(in: .whitespaces)) }
            guard let minimum, minimum > expires, minimum <= 86_400 else {
                return failed("423 without a usable Min-Expires", retry: true)
            }
            return send(expires: minimum, authorization: nil, in: context)
        case .response(let response):
            return failed("\(response.statusCode) \(response.reasonPhrase)", retry: response.statusCode != 403)
        case .timeout:
            return failed("no answer from the registrar", retry: true)
        case .transportError:
            return failed("the transport failed", retry: true)
        }
    }

    // MARK: Steps

    /// A REGISTER with `expires`, answering a challenge when given an authorization.
    private mutating func send(
        expires: Int, authorization: DigestAuthorization?, in context: some RegistrationContext
    ) -> [Effect] {
        let target = configuration.registrar
        let destination: SIPDestination
        switch context.outOfDialogDestination(for: target) {
        case .success(let found): destination = found
        case .failure(let problem): return failed("cannot reach the registrar: \(problem)", retry: true)
        }
        cseq += 1
        registrarDestination = destination
        var contact = context.localContact(for: destination, secure: target.scheme == "sips")
        if let mappedAddress {
            contact.uri.host = mappedAddress.host
            contact.uri.port = Int(mappedAddress.port)
        }
        for parameter in configuration.contactParameters { contact.uri.parameters.append(parameter) }
        contact.parameters.set("expires", String(expires))
        var headers: SIPHeaders = ["Expires": String(expires), "User-Agent": context.configuration.product]
        if expires > 0 {
            // The binding under the Contact we gave before the NAT's mapping was learned goes in the same REGISTER.
            for stale in staleContacts where stale.uri != contact.uri { headers.append("Contact", stale.headerValue) }
        }
        if let authorization { headers.append(authorization.headerName, authorization.headerValue) }
        if let route = context.preloadedRoute { headers.append("Route", route) }
        var requestURI = target
        requestURI.user = nil
        let aor = SIPAddress(uri: configuration.addressOfRecord)
        var from = aor
        from.parameters.set("tag", localTag)
        let request = SIPRequest(
            method: .register, uri: requestURI, via: context.newVia(for: destination), from: from, to: aor,
            callID: callID, cseq: cseq, contact: contact, headers: headers)
        if expires > 0 { state = .registering }
        return [.send(request, RegistrationAttempt(request: request, expires: expires), to: destination)]
    }

    private mutating func answerChallenge(
        _ response: SIPResponse, attempt: RegistrationAttempt, in context: some RegistrationContext
    ) -> [Effect] {
        guard let credentials = configuration.credentials else {
            return failed("the registrar asks for credentials and none are configured", retry: false)
        }
        let challenge: DigestChallenge
        do {
            guard let first = try DigestChallenge.preferred(in: response).first else {
                return failed("\(response.statusCode) without a Digest challenge", retry: true)
            }
            challenge = first
        } catch {
            return failed("unusable challenge: \(error)", retry: true)
        }
        if answeredNonces.contains(challenge.nonce) && !challenge.isStale {
            return failed("credentials refused for \(credentials.username) in realm \(challenge.realm)", retry: false)
        }
        answeredNonces.insert(challenge.nonce)
        let authorization: DigestAuthorization
        do {
            authorization = try digest.authorize(
                attempt.request, challenge: challenge, credentials: credentials, cnonce: context.cnonce(),
                hash: context.digestHash)
        } catch {
            return failed("cannot answer the challenge: \(error)", retry: false)
        }
        return [.log(.debug, "registration: answering a \(challenge.algorithm.token) challenge from realm \(challenge.realm)")]
            + send(expires: attempt.expires, authorization: authorization, in: context)
    }

    /// The registrar saw our REGISTER come from `mapped`, not from our Contact: our address toward it is the NAT's
    /// mapping now. Registered again at once with a Contact naming it; the old binding goes with that REGISTER.
    private mutating func remap(
        to mapped: SIPPeerAddress, sent request: SIPRequest, granted: Int, in context: some RegistrationContext
    ) -> [Effect] {
        let previous = mappedAddress
        // Seen at our own address again (the NAT is gone): nothing is mapped any more.
        let local = registrarDestination.map { context.localContact(for: $0, secure: configuration.registrar.scheme == "sips") }
        let isLocal = local.map { Self.canonical($0.uri.host) == mapped.host && $0.uri.port.map(UInt16.init) == mapped.port } ?? false
        mappedAddress = isLocal ? nil : mapped
        if var old = request.headers.contacts.first {
            old.parameters.set("expires", "0")
            staleContacts = [old]
        }
        let line = "registration: the registrar saw us at \(mapped), not at our Contact "
            + "\(request.headers.contacts.first?.uri.description ?? "-")"
            + (isLocal ? ": registering our own address again"
                : previous == nil ? " (a NAT): registering that address" : " (the NAT's mapping changed): registering it")
        return [.cancelTimer, .log(.info, line)] + send(expires: configuration.expires, authorization: nil, in: context)
    }

    /// Where a 2xx's top Via says our REGISTER came from (`received`, else the Via's host; `rport`, else its port),
    /// when that is not what our Contact said. Over UDP a different host or port is a NAT's mapping; over TCP and
    /// TLS only a different host (the port of an outgoing connection is never our listener's), and then the
    /// connection's address is the one the registrar reaches us on.
    static func mapping(in response: SIPResponse, sentContact: SIPAddress?, kind: SIPTransportKind) -> SIPPeerAddress? {
        guard let via = response.headers.topVia, let contact = sentContact else { return nil }
        let host = canonical(via.received ?? via.host)
        guard IPAddress(host) != nil, let port = via.rport ?? via.port, let mappedPort = UInt16(exactly: port) else {
            return nil
        }
        let contactHost = canonical(contact.uri.host)
        let contactPort = contact.uri.port ?? (kind == .tls ? 5061 : 5060)
        let hostDiffers = host != contactHost
        guard hostDiffers || (kind == .udp && port != contactPort) else { return nil }
        return SIPPeerAddress(host: host, port: mappedPort)
    }

    /// An address in inet_ntop's form, without brackets (so two spellings of one IPv6 address compare equal).
    private static func canonical(_ host: String) -> String {
        var bare = host
        if bare.hasPrefix("[") && bare.hasSuffix("]") { bare = String(bare.dropFirst().dropLast()) }
        return IPAddress(bare)?.text ?? bare
    }

    private mutating func failed(_ reason: String, retry: Bool) -> [Effect] {
        failures += 1
        state = .failed(reason: reason)
        let log = Effect.log(.error, "registration: \(reason)" + (retry ? "; retrying in \(retryDelay)" : ""))
        return retry ? [log, .startTimer(after: retryDelay)] : [log]
    }

    /// The lifetime the registrar granted: our Contact's `expires` in the 200 (the one naming our host and port, else
    /// the first: a 200 lists every binding of the address of record), else its Expires header, else what we asked
    /// for.
    static func grantedExpiry(_ response: SIPResponse, requested: Int, contact: SIPURI? = nil) -> Int {
        let contacts = response.headers.contacts
        let ours = contacts.filter { $0.uri.host == contact?.host && $0.uri.port == contact?.port }
        let fromContact = (ours.isEmpty ? contacts : ours).compactMap { $0.parameters["expires"].flatMap { Int($0) } }.first
        let fromHeader = response.headers["Expires"].flatMap { Int($0.trimmingCharacters(in: .whitespaces)) }
        return max(1, min(fromContact ?? fromHeader ?? requested, 86_400 * 7))
    }
}

extension ClientTransactionEvent {
    /// Whether this is a provisional response.
    var isProvisional: Bool {
        if case .response(let response) = self { return response.isProvisional }
        return false
    }

    /// `200 OK`, `timeout` or `transport error`, for logs.
    var summary: String {
        switch self {
        case .response(let response): "\(response.statusCode) \(response.reasonPhrase)"
        case .timeout: "timeout"
        case .transportError: "transport error"
        }
    }
}
