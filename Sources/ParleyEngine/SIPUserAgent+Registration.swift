import Foundation
import ParleyIO
import SIPMessages
import SIPSignaling
import SIPTransport

/// The driver's side of the accounts' registrations: feeding each account's machine and carrying out its effects.
extension SIPUserAgent {
    /// Starts every account's registration.
    func registerAll() {
        register(spacing: Array(accounts.indices))
    }

    /// Registers the accounts `indices` (in that order): the first at once, the others one every
    /// ``registrationSpacingMilliseconds``, so that a parleyd with a thousand accounts does not send a thousand
    /// REGISTERs (and as many challenges and refreshes ever after) in one burst, which a registrar's flood
    /// protection drops (Kamailio's pike module allows 30 requests a second from one address by default).
    func register(spacing indices: [Int]) {
        for (position, index) in indices.enumerated() {
            if position == 0 {
                register(index)
                continue
            }
            if let timer = accounts[index].registrationTimer { environment.cancel(timer) }
            let delay = Duration.milliseconds(position * Self.registrationSpacingMilliseconds)
            accounts[index].registrationTimer = environment.schedule(after: delay) { [weak self] in
                self?.accounts[index].registrationTimer = nil
                self?.register(index)
            }
        }
    }

    /// The spacing of REGISTERs several accounts send at once: 25 a second.
    static let registrationSpacingMilliseconds = 40

    /// Starts registering account `index` (or refreshing) now, once the next hop (the outbound proxy, else the
    /// registrar) is located: at once for a numeric host, a turn later for a name (the resolver's cache answers a
    /// refresh).
    func register(_ index: Int) {
        let account = accounts[index].account
        locate(nextHop(for: account.registration.registrar, through: account)) { [weak self] result in
            if case .failure(let problem) = result { self?.log.info("registration of \(account.name): \(problem)") }
            // A failure to locate is the machine's to report and retry: its destination says why.
            self?.driveRegistration(index) { machine, context in machine.register(in: context) }
        }
    }

    /// Removes every account's binding (REGISTER with expires 0), on shutdown.
    func unregisterAll() {
        for index in accounts.indices {
            driveRegistration(index) { machine, context in machine.unregister(in: context) }
        }
    }

    /// Runs one transition of account `index`'s registration and carries out its effects; a change of its state is
    /// announced.
    func driveRegistration(
        _ index: Int, _ transition: (inout RegistrationMachine, AccountContext) -> [RegistrationMachine.Effect]
    ) {
        var machine = accounts[index].registration
        let before = machine.state
        let effects = transition(&machine, AccountContext(agent: self, index: index))
        accounts[index].registration = machine
        if let registrar = machine.registrarDestination, registrarAccounts[registrar.address.host] == nil {
            registrarAccounts[registrar.address.host] = index
        }
        if machine.state != before {
            registrationMovedKeepAlive(index, to: machine.state, registrar: machine.registrarDestination)
            onEvent?(.registrationChanged(accounts[index].account, machine.state))
        }
        for effect in effects {
            switch effect {
            case .send(let request, let attempt, let destination):
                transactions.send(request, to: destination, owner: .registration(attempt, account: index))
            case .startTimer(let delay):
                if let timer = accounts[index].registrationTimer { environment.cancel(timer) }
                accounts[index].registrationTimer = environment.schedule(after: delay) { [weak self] in
                    self?.accounts[index].registrationTimer = nil
                    self?.register(index)
                }
            case .cancelTimer:
                if let timer = accounts[index].registrationTimer { environment.cancel(timer) }
                accounts[index].registrationTimer = nil
            case .log(let level, let line):
                log.write(level, accounts.count > 1 ? "\(accounts[index].account.name): \(line)" : line)
            }
        }
    }

    /// What a REGISTER's transaction said, for account `index`: a silent target goes to the back of the located
    /// ones (RFC 3263 failover), then the machine hears it.
    func registrationAnswered(_ event: ClientTransactionEvent, attempt: RegistrationAttempt, account index: Int) {
        let account = accounts[index].account
        if case .response = event {} else if case .success(let silent) = outOfDialogDestination(
            for: account.registration.registrar, through: account)
        {
            targetFailed(silent, of: nextHop(for: account.registration.registrar, through: account))
        }
        driveRegistration(index) { machine, context in machine.receive(event, for: attempt, in: context) }
    }

    /// A fresh client nonce for a digest answer.
    func cnonce() -> String { SecureRandom.token(16) }
}

/// What one account's registration machine asks of the agent: the agent's answers, with the account's outbound
/// proxy and its Contact.
struct AccountContext: RegistrationContext {
    let agent: SIPUserAgent
    let index: Int

    var account: Account { agent.accounts[index].account }
    var configuration: EngineConfiguration { agent.configuration }
    var now: Date { agent.now }
    var preloadedRoute: String? { agent.preloadedRoute(through: account) }
    var digestHash: DigestHash { openSSLDigestHash }

    func outOfDialogDestination(for uri: SIPURI) -> Result<SIPDestination, HandleDialError> {
        agent.outOfDialogDestination(for: uri, through: account)
    }

    func localContact(for destination: SIPDestination, secure: Bool) -> SIPAddress {
        var contact = agent.localContact(for: destination, secure: secure)
        if agent.accounts.count > 1 { contact.uri.parameters.set("line", account.line) }
        return contact
    }

    func newVia(for destination: SIPDestination) -> SIPVia { agent.newVia(for: destination) }
    func cnonce() -> String { agent.cnonce() }
}

/// The digest of a text with an algorithm, through OpenSSL (ParleyIO's `MessageDigest`): what every digest answer of
/// the engine uses (and `parley-bench-register`'s).
package let openSSLDigestHash: DigestHash = { algorithm, input in
    let data = Data(input.utf8)
    switch algorithm.hashFunction {
    case .sha256, .sha256Session: return MessageDigest.sha256(data)
    case .sha512_256, .sha512_256Session: return MessageDigest.sha512_256(data)
    case .md5, .md5Session: return MessageDigest.md5(data)
    }
}
