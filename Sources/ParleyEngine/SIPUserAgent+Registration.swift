import Foundation
import ParleyIO
import SIPMessages
import SIPSignaling
import SIPTransport

/// The driver's side of the registration: feeding the machine and carrying out its effects.
extension SIPUserAgent: RegistrationContext {
    /// Starts registering (or refreshing) now, once the next hop (the outbound proxy, else the registrar) is located:
    /// at once for a numeric host, a turn later for a name (the resolver's cache answers a refresh).
    func register() {
        guard let registrar = registration?.configuration.registrar else { return }
        locate(nextHop(for: registrar)) { [weak self] result in
            if case .failure(let problem) = result { self?.log.info("registration: \(problem)") }
            // A failure to locate is the machine's to report and retry: its destination says why.
            self?.driveRegistration { machine, context in machine.register(in: context) }
        }
    }

    /// Removes our binding (REGISTER with expires 0), on shutdown.
    func unregister() {
        driveRegistration { machine, context in machine.unregister(in: context) }
    }

    /// Runs one transition of the registration (nothing when none is configured) and carries out its effects; a
    /// change of its state is announced.
    func driveRegistration(_ transition: (inout RegistrationMachine, SIPUserAgent) -> [RegistrationMachine.Effect]) {
        guard var machine = registration else { return }
        let before = machine.state
        let effects = transition(&machine, self)
        registration = machine
        if machine.state != before {
            registrationMovedKeepAlive(to: machine.state, registrar: machine.registrarDestination)
            onRegistrationChanged?(machine.state)
        }
        for effect in effects {
            switch effect {
            case .send(let request, let attempt, let destination):
                transactions.send(request, to: destination, owner: .registration(attempt))
            case .startTimer(let delay):
                if let registrationTimer { environment.cancel(registrationTimer) }
                registrationTimer = environment.schedule(after: delay) { [weak self] in
                    self?.registrationTimer = nil
                    self?.register()
                }
            case .cancelTimer:
                if let registrationTimer { environment.cancel(registrationTimer) }
                registrationTimer = nil
            case .log(let level, let line):
                log.write(level, line)
            }
        }
    }

    /// A fresh client nonce for a digest answer.
    func cnonce() -> String { SecureRandom.token(16) }

    /// Digests through OpenSSL (ParleyIO's `MessageDigest`).
    var digestHash: DigestHash { openSSLDigestHash }
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
