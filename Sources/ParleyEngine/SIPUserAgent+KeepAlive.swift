import Foundation
import ParleyIO
import SIPMessages
import SIPSignaling
import SIPTransport

/// The driver's side of the keep-alives toward the registrar (``KeepAliveMachine``): they run while the registration
/// is registered, toward the flow its REGISTERs take.
extension SIPUserAgent {
    /// The bytes of a ping: RFC 5626 §3.5.1's double CRLF.
    static let keepAlivePing = Data("\r\n\r\n".utf8)

    /// Starts or stops the keep-alives as the registration's state says: registered starts them toward the
    /// registrar; unregistered or failed stops them; a REGISTER in flight changes nothing.
    func registrationMovedKeepAlive(to state: RegistrationState, registrar: SIPDestination?) {
        switch state {
        case .registered:
            guard let registrar else { return }
            driveKeepAlive { $0.start(toward: registrar) }
        case .unregistered, .failed:
            driveKeepAlive { $0.stop() }
        case .registering:
            break
        }
    }

    /// Runs one transition of the keep-alives (nothing when none are configured) and carries out its effects.
    func driveKeepAlive(_ transition: (inout KeepAliveMachine) -> [KeepAliveMachine.Effect]) {
        guard var machine = keepAlive else { return }
        let effects = transition(&machine)
        keepAlive = machine
        for effect in effects {
            switch effect {
            case .sendPing(let flow):
                environment.send(Self.keepAlivePing, to: flow)
            case .sendOptions(let flow):
                transactions.send(keepAliveOptions(to: flow), to: flow, owner: .keepAlive)
            case .startTimer(let delay):
                if let keepAliveTimer { environment.cancel(keepAliveTimer) }
                keepAliveTimer = environment.schedule(after: delay) { [weak self] in
                    self?.keepAliveTimer = nil
                    self?.driveKeepAlive { $0.timerFired() }
                }
            case .cancelTimer:
                if let keepAliveTimer { environment.cancel(keepAliveTimer) }
                keepAliveTimer = nil
            case .flowFailed:
                register()
            case .log(let level, let line):
                log.write(level, line)
            }
        }
    }

    /// What the keep-alive OPTIONS' transaction said.
    func keepAliveAnswered(_ event: ClientTransactionEvent) {
        switch event {
        case .response(let response) where response.isProvisional: return
        case .response: driveKeepAlive { $0.optionsAnswered() }
        case .timeout: driveKeepAlive { $0.optionsFailed("timeout") }
        case .transportError: driveKeepAlive { $0.optionsFailed("transport error") }
        }
    }

    /// An OPTIONS to the registrar (outside any dialog: a Call-ID of its own), from our address of record.
    private func keepAliveOptions(to flow: SIPDestination) -> SIPRequest {
        let registration = configuration.registration
        var target = registration?.registrar ?? SIPURI(scheme: "sip", user: nil, host: flow.address.host, port: Int(flow.address.port))
        target.user = nil
        var from = SIPAddress(uri: registration?.addressOfRecord ?? target)
        from.parameters.set("tag", SecureRandom.token(10))
        return SIPRequest(
            method: .options, uri: target, via: newVia(for: flow), from: from, to: SIPAddress(uri: target),
            callID: SecureRandom.token(20) + "@" + Self.callIDHost(configuration), cseq: 1,
            headers: ["User-Agent": configuration.product, "Accept": "application/sdp"])
    }
}
