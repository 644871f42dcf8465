import Foundation
import ParleyIO
import SIPMessages
import SIPSignaling
import SIPTransport

/// The driver's side of the keep-alives toward registrars (``KeepAliveMachine``): they run while an account is
/// registered, toward the flow its REGISTERs take, one machine per flow however many accounts share it
/// (``FlowKeepAlive``).
extension SIPUserAgent {
    /// The bytes of a ping: RFC 5626 §3.5.1's double CRLF.
    static let keepAlivePing = Data("\r\n\r\n".utf8)

    /// Starts or stops account `index`'s part in the keep-alives as its registration's state says: registered joins
    /// the registrar's flow (starting its keep-alives when it is the first); unregistered or failed leaves it
    /// (stopping them when it was the last); a REGISTER in flight changes nothing.
    func registrationMovedKeepAlive(_ index: Int, to state: RegistrationState, registrar: SIPDestination?) {
        switch state {
        case .registered:
            guard let registrar, let policy = accounts[index].account.registration.keepAlive else { return }
            let flow = FlowKey(registrar)
            if accounts[index].keepAliveFlow == flow { return }
            leaveKeepAlive(index)
            accounts[index].keepAliveFlow = flow
            if keepAlives[flow] != nil {
                keepAlives[flow]?.accounts.insert(index)
            } else {
                keepAlives[flow] = FlowKeepAlive(machine: KeepAliveMachine(policy: policy), timer: nil, accounts: [index])
                driveKeepAlive(flow) { $0.start(toward: registrar) }
            }
        case .unregistered, .failed:
            leaveKeepAlive(index)
        case .registering:
            break
        }
    }

    /// Account `index` no longer keeps its flow open; the flow's keep-alives stop when no account is left on it.
    private func leaveKeepAlive(_ index: Int) {
        guard let flow = accounts[index].keepAliveFlow else { return }
        accounts[index].keepAliveFlow = nil
        keepAlives[flow]?.accounts.remove(index)
        guard keepAlives[flow]?.accounts.isEmpty == true else { return }
        driveKeepAlive(flow) { $0.stop() }
        keepAlives[flow] = nil
    }

    /// Runs one transition of a flow's keep-alives (nothing when none run there) and carries out its effects.
    func driveKeepAlive(_ flow: FlowKey, _ transition: (inout KeepAliveMachine) -> [KeepAliveMachine.Effect]) {
        guard var machine = keepAlives[flow]?.machine else { return }
        let effects = transition(&machine)
        keepAlives[flow]?.machine = machine
        for effect in effects {
            switch effect {
            case .sendPing(let destination):
                environment.send(Self.keepAlivePing, to: destination)
            case .sendOptions(let destination):
                transactions.send(keepAliveOptions(to: destination, flow: flow), to: destination, owner: .keepAlive(flow))
            case .startTimer(let delay):
                if let timer = keepAlives[flow]?.timer { environment.cancel(timer) }
                keepAlives[flow]?.timer = environment.schedule(after: delay) { [weak self] in
                    self?.keepAlives[flow]?.timer = nil
                    self?.driveKeepAlive(flow) { $0.timerFired() }
                }
            case .cancelTimer:
                if let timer = keepAlives[flow]?.timer { environment.cancel(timer) }
                keepAlives[flow]?.timer = nil
            case .flowFailed:
                register(spacing: (keepAlives[flow]?.accounts ?? []).sorted())
            case .log(let level, let line):
                log.write(level, line)
            }
        }
    }

    /// What a flow's keep-alive OPTIONS' transaction said.
    func keepAliveAnswered(_ event: ClientTransactionEvent, flow: FlowKey) {
        switch event {
        case .response(let response) where response.isProvisional: return
        case .response: driveKeepAlive(flow) { $0.optionsAnswered() }
        case .timeout: driveKeepAlive(flow) { $0.optionsFailed("timeout") }
        case .transportError: driveKeepAlive(flow) { $0.optionsFailed("transport error") }
        }
    }

    /// An OPTIONS to the registrar (outside any dialog: a Call-ID of its own), from the address of record of the
    /// first account on the flow.
    private func keepAliveOptions(to destination: SIPDestination, flow: FlowKey) -> SIPRequest {
        let registration = keepAlives[flow]?.accounts.min().map { accounts[$0].account.registration }
        var target = registration?.registrar
            ?? SIPURI(scheme: "sip", user: nil, host: destination.address.host, port: Int(destination.address.port))
        target.user = nil
        var from = SIPAddress(uri: registration?.addressOfRecord ?? target)
        from.parameters.set("tag", SecureRandom.token(10))
        return SIPRequest(
            method: .options, uri: target, via: newVia(for: destination), from: from, to: SIPAddress(uri: target),
            callID: SecureRandom.token(20) + "@" + Self.callIDHost(configuration), cseq: 1,
            headers: ["User-Agent": configuration.product, "Accept": "application/sdp"])
    }
}
