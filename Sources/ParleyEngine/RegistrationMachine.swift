import Foundation
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
/// the time, a fresh cnonce and the digest hash. Queries and builders only (finding the registrar may resolve its
/// host name, synchronously, as every request of the engine's does); ``SIPUserAgent`` is the context.
package protocol RegistrationContext {
    var configuration: EngineConfiguration { get }
    var now: Date { get }
    /// Where a REGISTER to the registrar `uri` goes: the outbound proxy when there is one, else the registrar (a host
    /// name as located before the registration ran: RFC 3263).
    func outOfDialogDestination(for uri: SIPURI) -> Result<SIPDestination, HandleDialError>
    /// The Route header of out-of-dialog requests (`<sip:proxy;lr>`), nil without an outbound proxy.
    var preloadedRoute: String? { get }
    func contactAddress(for destination: SIPDestination, secure: Bool) -> SIPAddress
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
/// ```
///  unregistered ─start─▶ registering ─2xx─▶ registered ─refresh timer─▶ registering
///                          │  ▲   │ 401/407 (answered once per nonce)       │
///                          │  └───┘ 423 (again with Min-Expires)            │ unregister (expires 0, any answer)
///                          ▼                                                ▼
///                        failed ──retry timer (5 s doubling to 5 min)──▶ registering        unregistered
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

    package init(configuration: RegistrationConfiguration, callID: String, localTag: String) {
        self.configuration = configuration
        self.callID = callID
        self.localTag = localTag
    }

    /// How long to wait before retrying after `failures` failures: 5 s doubling to 5 minutes.
    var retryDelay: Duration { .seconds(min(300, 5 << min(failures, 6))) }

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
            let granted = Self.grantedExpiry(response, requested: expires)
            failures = 0
            state = .registered(until: context.now.addingTimeInterval(TimeInterval(granted)))
            return [
                .startTimer(after: Self.refreshDelay(grantedSeconds: granted)),
                .log(.info, "registration: registered \(configuration.addressOfRecord) for \(granted) s"),
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
        var contact = context.contactAddress(for: destination, secure: target.scheme == "sips")
        for parameter in configuration.contactParameters { contact.uri.parameters.append(parameter) }
        contact.parameters.set("expires", String(expires))
        var headers: SIPHeaders = ["Expires": String(expires), "User-Agent": context.configuration.product]
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

    private mutating func failed(_ reason: String, retry: Bool) -> [Effect] {
        failures += 1
        state = .failed(reason: reason)
        let log = Effect.log(.error, "registration: \(reason)" + (retry ? "; retrying in \(retryDelay)" : ""))
        return retry ? [log, .startTimer(after: retryDelay)] : [log]
    }

    /// The lifetime the registrar granted: our Contact's `expires` in the 200, else its Expires header, else what we
    /// asked for.
    static func grantedExpiry(_ response: SIPResponse, requested: Int) -> Int {
        let fromContact = response.headers.contacts.compactMap { $0.parameters["expires"].flatMap { Int($0) } }.first
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
