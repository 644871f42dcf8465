import Foundation
import SIPMessages
import SIPSignaling
import ParleyIO
import SIPTransport

/// REGISTER as a client: challenge and answer, refresh before expiry, back-off after failures, unregister on
/// shutdown.
extension SIPUserAgent {
    /// Starts registering (or refreshing) now.
    func register() {
        guard var client = registration else { return }
        if let timer = client.refreshTimer { environment.cancel(timer) }
        client.refreshTimer = nil
        client.answeredNonces = []
        registration = client
        sendRegister(expires: client.configuration.expires, authorization: nil)
    }

    /// Sends REGISTER with `expires` (0 removes our binding), answering a challenge when given one.
    private func sendRegister(expires: Int, authorization: DigestAuthorization?) {
        guard var client = registration else { return }
        let target = client.configuration.registrar
        let destination: SIPDestination
        switch self.destination(for: target) {
        case .success(let found): destination = found
        case .failure(let problem):
            registrationFailed("cannot reach the registrar: \(problem)", retry: true)
            return
        }
        client.cseq += 1
        var contact = contactAddress(for: destination, secure: target.scheme == "sips")
        for parameter in client.configuration.contactParameters { contact.uri.parameters.append(parameter) }
        contact.parameters.set("expires", String(expires))
        var headers: SIPHeaders = ["Expires": String(expires), "User-Agent": configuration.product]
        if let authorization { headers.append(authorization.headerName, authorization.headerValue) }
        var requestURI = target
        requestURI.user = nil
        let aor = SIPAddress(uri: client.configuration.addressOfRecord)
        var from = aor
        from.parameters.set("tag", client.localTag)
        let request = SIPRequest(
            method: .register, uri: requestURI, via: newVia(for: destination), from: from, to: aor,
            callID: client.callID, cseq: client.cseq, contact: contact, headers: headers)
        if expires > 0 { client.state = .registering }
        registration = client
        transactions.send(request, to: destination) { [weak self] event in
            self?.registerEvent(event, request: request, expires: expires)
        }
    }

    private func registerEvent(_ event: ClientTransactionEvent, request: SIPRequest, expires: Int) {
        guard var client = registration else { return }
        if expires == 0, case .response(let response) = event, response.statusCode == 401 || response.statusCode == 407 {
            answerChallenge(response, request: request, expires: 0)
            return
        }
        if expires == 0, !event.isProvisional {
            // Unregistering on the way out: whatever the answer, nothing is retried.
            client.state = .unregistered
            registration = client
            log.info("registration: removed our binding at \(client.configuration.registrar) (\(event.summary))")
            return
        }
        switch event {
        case .response(let response) where response.isProvisional:
            return
        case .response(let response) where response.isSuccess:
            let granted = Self.grantedExpiry(response, requested: expires)
            client.failures = 0
            client.state = .registered(until: environment.now.addingTimeInterval(TimeInterval(granted)))
            client.refreshTimer = environment.schedule(after: RegistrationClient.refreshDelay(grantedSeconds: granted)) {
                [weak self] in
                self?.registration?.refreshTimer = nil
                self?.register()
            }
            registration = client
            log.info("registration: registered \(client.configuration.addressOfRecord) for \(granted) s")
        case .response(let response) where response.statusCode == 401 || response.statusCode == 407:
            answerChallenge(response, request: request, expires: expires)
        case .response(let response) where response.statusCode == 423:
            // Interval Too Brief: ask again with the registrar's minimum (RFC 3261 §10.2.8).
            let minimum = response.headers["Min-Expires"].flatMap { Int($0.trimmingCharacters(in: .whitespaces)) }
            guard let minimum, minimum > expires, minimum <= 86_400 else {
                registrationFailed("423 without a usable Min-Expires", retry: true)
                return
            }
            sendRegister(expires: minimum, authorization: nil)
        case .response(let response):
            registrationFailed("\(response.statusCode) \(response.reasonPhrase)", retry: response.statusCode != 403)
        case .timeout:
            registrationFailed("no answer from the registrar", retry: true)
        case .transportError:
            registrationFailed("the transport failed", retry: true)
        }
    }

    private func answerChallenge(_ response: SIPResponse, request: SIPRequest, expires: Int) {
        guard var client = registration else { return }
        guard let credentials = client.configuration.credentials else {
            registrationFailed("the registrar asks for credentials and none are configured", retry: false)
            return
        }
        let challenge: DigestChallenge
        do {
            guard let first = try DigestChallenge.preferred(in: response).first else {
                registrationFailed("\(response.statusCode) without a Digest challenge", retry: true)
                return
            }
            challenge = first
        } catch {
            registrationFailed("unusable challenge: \(error)", retry: true)
            return
        }
        if client.answeredNonces.contains(challenge.nonce) && !challenge.isStale {
            registrationFailed("credentials refused for \(credentials.username) in realm \(challenge.realm)", retry: false)
            return
        }
        client.answeredNonces.insert(challenge.nonce)
        let authorization: DigestAuthorization
        do {
            authorization = try client.digest.authorize(
                request, challenge: challenge, credentials: credentials, cnonce: SecureRandom.token(16),
                hash: Self.digestHash)
        } catch {
            registrationFailed("cannot answer the challenge: \(error)", retry: false)
            return
        }
        registration = client
        log.debug("registration: answering a \(challenge.algorithm.token) challenge from realm \(challenge.realm)")
        sendRegister(expires: expires, authorization: authorization)
    }

    private func registrationFailed(_ reason: String, retry: Bool) {
        guard var client = registration else { return }
        client.failures += 1
        client.state = .failed(reason: reason)
        log.error("registration: \(reason)" + (retry ? "; retrying in \(client.retryDelay)" : ""))
        if retry {
            client.refreshTimer = environment.schedule(after: client.retryDelay) { [weak self] in
                self?.registration?.refreshTimer = nil
                self?.register()
            }
        }
        registration = client
    }

    /// Removes our binding (REGISTER with expires 0), on shutdown. Returns whether a request went out.
    func unregister() -> Bool {
        guard var client = registration, case .registered = client.state else { return false }
        if let timer = client.refreshTimer { environment.cancel(timer) }
        client.refreshTimer = nil
        client.answeredNonces = []
        registration = client
        sendRegister(expires: 0, authorization: nil)
        return true
    }

    /// The lifetime the registrar granted: our Contact's `expires` in the 200, else its Expires header, else what we
    /// asked for.
    static func grantedExpiry(_ response: SIPResponse, requested: Int) -> Int {
        let fromContact = response.headers.contacts.compactMap { $0.parameters["expires"].flatMap { Int($0) } }.first
        let fromHeader = response.headers["Expires"].flatMap { Int($0.trimmingCharacters(in: .whitespaces)) }
        return max(1, min(fromContact ?? fromHeader ?? requested, 86_400 * 7))
    }

    /// Digests through OpenSSL (SIPTransport's `MessageDigest`).
    static let digestHash: DigestHash = { algorithm, input in
        let data = Data(input.utf8)
        switch algorithm.hashFunction {
        case .sha256, .sha256Session: return MessageDigest.sha256(data)
        case .sha512_256, .sha512_256Session: return MessageDigest.sha512_256(data)
        case .md5, .md5Session: return MessageDigest.md5(data)
        }
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
