import Foundation
import SIPMessages
import SIPSignaling
import ParleyIO
import SIPTransport

/// What became of a request the transaction layer was handed.
enum ServerRequestDisposition {
    /// A new request, no transaction yet: the transaction user admits it (``TransactionLayer/open(_:key:from:)``, then
    /// answers through ``TransactionLayer/respond(_:to:)``) or refuses it statelessly (a flood leaves no state).
    case new(TransactionKey)
    /// A retransmission, or the ACK of a non-2xx final response: the matching transaction absorbed it.
    case absorbed
    /// An ACK that matches no transaction: the ACK of a 2xx, which belongs to the dialog.
    case ackForSuccess
    /// A retransmission of an INVITE we already answered with a 2xx (RFC 6026's Accepted state): the transaction
    /// user sends its 2xx again if the ACK is still outstanding.
    case retransmittedAcceptedInvite
}

/// What a client transaction tells its transaction user.
package enum ClientTransactionEvent {
    /// A response (provisional or final) arrived.
    case response(SIPResponse)
    /// No final response came in time (timer B or F).
    case timeout
    /// The transport could not send the request.
    case transportError
}

/// Whose request a client transaction carries: its events go back to that owner, by value (no closures).
enum TransactionOwner {
    /// A call leg's request.
    case leg(UUID, CallLegRequest)
    /// An account's REGISTER (the account's index).
    case registration(RegistrationAttempt, account: Int)
    /// A keep-alive OPTIONS to a registrar, on a flow.
    case keepAlive(FlowKey)
}

/// Who hears of the client transactions' events.
protocol TransactionUser: AnyObject {
    /// A client transaction of `owner` has news.
    func clientTransaction(of owner: TransactionOwner, event: ClientTransactionEvent)
}

/// The driver of the RFC 3261 §17 machines: it keeps the live transactions, matches messages to them, runs their
/// effects (sending through the environment, timers on its timeline) and forgets them when they end.
///
/// Confined to the environment's thread. Its user may call back into the layer (send an ACK, a BYE) from inside.
final class TransactionLayer {
    private let environment: any SIPEnvironment
    /// Hears the client transactions' events.
    weak var user: (any TransactionUser)?
    let timers: TransactionTimers
    private var servers: [TransactionKey: ServerEntry] = [:]
    private var clients: [TransactionKey: ClientEntry] = [:]
    /// INVITE server transactions answered with a 2xx, kept for timer L (64·T1, RFC 6026) so that retransmissions
    /// of their INVITE are recognised rather than taken for new calls.
    private var accepted: [TransactionKey: EngineTimer] = [:]
    /// Messages that failed to serialise or had no transaction to go to, for the status counters.
    private(set) var absorbed = 0
    /// Called once when no client transaction is live any more (see ``whenClientsDone(_:)``).
    private var onClientsDone: (() -> Void)?

    init(environment: any SIPEnvironment, timers: TransactionTimers) {
        self.environment = environment
        self.timers = timers
    }

    /// Live server and client transactions.
    var count: (servers: Int, clients: Int) { (servers.count + accepted.count, clients.count) }

    // MARK: Server transactions

    /// Matches `request` to a live server transaction by its key (`TransactionKey(serverRequest:)`, nil when it has
    /// none: absorbed); a request that matches none is `.new`, and has no transaction until it is opened.
    func receive(_ request: SIPRequest, key: TransactionKey?) -> ServerRequestDisposition {
        guard let key else { return .absorbed }
        if accepted[key] != nil {
            return request.method == .invite ? .retransmittedAcceptedInvite : .ackForSuccess
        }
        if let entry = servers[key] {
            run(entry.machine.receive(request), server: entry, key: key)
            return .absorbed
        }
        return request.method == .ack ? .ackForSuccess : .new(key)
    }

    /// Opens the server transaction of a new request (`key` from ``receive(_:from:)``'s `.new`).
    func open(_ request: SIPRequest, key: TransactionKey, from source: SIPDestination) {
        precondition(servers[key] == nil && request.method != .ack, "a transaction is opened once, never for an ACK")
        let transport = TransactionTransport(viaTransport: source.kind.viaToken)
        switch request.method {
        case .ack:
            preconditionFailure("An ACK never opens a server transaction")
        case .invite:
            let (machine, effects) = InviteServerTransaction.start(request: request, transport: transport, timers: timers)
            run(effects, server: opened(ServerEntry(machine: .invite(machine), destination: source), key: key), key: key)
        case .bye, .cancel, .options, .register, .prack, .subscribe, .notify, .publish, .info, .refer, .message,
            .update, .extension:
            let (machine, effects) = NonInviteServerTransaction.start(
                request: request, transport: transport, timers: timers)
            run(effects, server: opened(ServerEntry(machine: .nonInvite(machine), destination: source), key: key), key: key)
        }
    }

    private func opened(_ entry: ServerEntry, key: TransactionKey) -> ServerEntry {
        servers[key] = entry
        return entry
    }

    /// Sends `response` through the server transaction `key` (dropped if it has ended).
    func respond(_ response: SIPResponse, to key: TransactionKey) {
        guard let entry = servers[key] else { return }
        let effects: [TransactionEffect]
        switch entry.machine {
        case .invite(var machine):
            // A non-2xx final response stays for retransmissions until timer H: as text only. A 2xx ends the
            // transaction (RFC 6026's Accepted state is the `accepted` table), so nothing keeps it.
            effects = machine.respond(response.isProvisional || response.isSuccess ? response : response.textOnly)
            entry.machine = .invite(machine)
            if response.isSuccess, machine.state == .terminated {
                accepted[key] = environment.schedule(after: timers.t1 * 64) { [weak self] in
                    self?.accepted[key] = nil
                }
            }
        case .nonInvite(var machine):
            // A final response stays for retransmissions until timer J (64·T1 over UDP): as text only.
            effects = machine.respond(response.isProvisional ? response : response.textOnly)
            entry.machine = .nonInvite(machine)
        }
        run(effects, server: entry, key: key)
    }

    /// The state of a live server transaction.
    func serverState(_ key: TransactionKey) -> TransactionState? {
        switch servers[key]?.machine {
        case .invite(let machine): machine.state
        case .nonInvite(let machine): machine.state
        case nil: nil
        }
    }

    /// Where responses of server transaction `key` go.
    func responseDestination(_ key: TransactionKey) -> SIPDestination? { servers[key]?.destination }

    // MARK: Client transactions

    /// Starts a client transaction for `request` (which carries a fresh branch) towards `destination`.
    @discardableResult
    func send(_ request: SIPRequest, to destination: SIPDestination, owner: TransactionOwner) -> TransactionKey? {
        guard let key = TransactionKey(clientRequest: request) else {
            preconditionFailure("A client request without a Via branch: \(request.method)")
        }
        let transport = TransactionTransport(viaTransport: destination.kind.viaToken)
        let machine: ClientMachine
        let effects: [TransactionEffect]
        if request.method == .invite {
            let started = InviteClientTransaction.start(request: request, transport: transport, timers: timers)
            (machine, effects) = (.invite(started.transaction), started.effects)
        } else {
            let started = NonInviteClientTransaction.start(request: request, transport: transport, timers: timers)
            (machine, effects) = (.nonInvite(started.transaction), started.effects)
        }
        clients[key] = ClientEntry(machine: machine, destination: destination, owner: owner)
        run(effects, client: key)
        return key
    }

    /// Matches a response to its client transaction; false when none matches (a retransmitted 2xx after the
    /// INVITE transaction ended belongs to the dialog).
    func receive(_ response: SIPResponse) -> Bool {
        guard let key = TransactionKey(response: response), var entry = clients[key] else { return false }
        let effects = entry.machine.receive(response)
        clients[key] = entry
        run(effects, client: key)
        return true
    }

    /// Drops the live client transactions of a call leg's request without telling anyone (the leg gave up on it).
    func abandon(leg uuid: UUID, request: CallLegRequest) {
        drop(clients.compactMap { key, entry -> TransactionKey? in
            guard case .leg(uuid, request) = entry.owner else { return nil }
            return key
        })
    }

    /// Drops an INVITE client transaction in Proceeding whose leg is forgotten: no timer of RFC 3261 ends that
    /// state, and the leg whose guard would have is gone (a call ended while its re-INVITE had only a 100).
    func abandonIfProceeding(_ key: TransactionKey) {
        guard case .invite(let machine) = clients[key]?.machine, machine.state == .proceeding else { return }
        drop([key])
    }

    private func drop(_ keys: [TransactionKey]) {
        for key in keys {
            guard let entry = clients.removeValue(forKey: key) else { continue }
            entry.timers.values.forEach(environment.cancel)
        }
        clientRemoved()
    }

    /// Calls `done` once no client transaction is live: now, or when the last one ends.
    func whenClientsDone(_ done: @escaping () -> Void) {
        guard clients.isEmpty else { return onClientsDone = done }
        done()
    }

    /// Tells whoever waits that the last client transaction is gone.
    private func clientRemoved() {
        guard clients.isEmpty, let done = onClientsDone else { return }
        onClientsDone = nil
        done()
    }

    /// Sends a message outside any transaction (the ACK of a 2xx, 2xx retransmissions, stateless replies).
    func sendStateless(_ message: SIPMessage, to destination: SIPDestination) {
        environment.send(message, to: destination)
    }

    /// The transport could not deliver to `destination`: every client transaction heading there fails.
    func transportFailed(towards destination: SIPDestination) {
        let failing = clients.filter { $0.value.destination.address == destination.address
            && $0.value.destination.kind == destination.kind }.map(\.key)
        for key in failing {
            guard var entry = clients[key] else { continue }
            let effects = entry.machine.transportFailed()
            clients[key] = entry
            run(effects, client: key)
        }
    }

    // MARK: Effects

    /// Runs a server transaction's effects on its entry (in the table already), and forgets it when the transaction
    /// ended. Server effects never call out of the layer, so nothing can look the entry up meanwhile.
    private func run(_ effects: [TransactionEffect], server entry: ServerEntry, key: TransactionKey) {
        for effect in effects {
            switch effect {
            case .send(let message):
                environment.send(message, to: entry.destination)
            case .startTimer(let timer, let delay):
                if let old = entry.timers[timer] { environment.cancel(old) }
                entry.timers[timer] = environment.schedule(after: delay) { [weak self] in
                    self?.serverTimerFired(timer, key: key)
                }
            case .cancelTimer(let timer):
                if let old = entry.timers.removeValue(forKey: timer) { environment.cancel(old) }
            case .terminated:
                entry.timers.values.forEach(environment.cancel)
                servers[key] = nil
                return
            case .deliverRequest, .deliverResponse, .timeout, .transportError:
                // The request reaches the transaction user through `receive`'s result; a server transaction that
                // times out or cannot send has nobody left to tell (the dialog has its own timers).
                break
            }
        }
    }

    private func run(_ effects: [TransactionEffect], client key: TransactionKey) {
        for effect in effects {
            guard let entry = clients[key] else { return }
            switch effect {
            case .send(let message):
                environment.send(message, to: entry.destination)
            case .startTimer(let timer, let delay):
                if let old = entry.timers[timer] { environment.cancel(old) }
                clients[key]?.timers[timer] = environment.schedule(after: delay) { [weak self] in
                    self?.clientTimerFired(timer, key: key)
                }
            case .cancelTimer(let timer):
                if let old = clients[key]?.timers.removeValue(forKey: timer) { environment.cancel(old) }
            case .deliverResponse(let response):
                user?.clientTransaction(of: entry.owner, event: .response(response))
            case .timeout:
                user?.clientTransaction(of: entry.owner, event: .timeout)
            case .transportError:
                user?.clientTransaction(of: entry.owner, event: .transportError)
            case .terminated:
                if let entry = clients.removeValue(forKey: key) { entry.timers.values.forEach(environment.cancel) }
                clientRemoved()
            case .deliverRequest:
                preconditionFailure("A client transaction delivered a request")
            }
        }
    }

    private func serverTimerFired(_ timer: TransactionTimer, key: TransactionKey) {
        guard let entry = servers[key] else { return }
        entry.timers[timer] = nil
        run(entry.machine.timerFired(timer), server: entry, key: key)
    }

    private func clientTimerFired(_ timer: TransactionTimer, key: TransactionKey) {
        guard var entry = clients[key] else { return }
        entry.timers[timer] = nil
        let effects = entry.machine.timerFired(timer)
        clients[key] = entry
        run(effects, client: key)
    }
}

/// A live server transaction, where its responses go, and its running timers. A class: the table holds a
/// reference, not the 336 bytes of the entry itself. Most entries are BYE transactions waiting 32 s for timer J
/// (320,000 at 10,000 calls/s), and a table of inline entries took 352 bytes per slot, free ones too, and moved
/// them all each time it doubled.
private final class ServerEntry {
    var machine: ServerMachine
    let destination: SIPDestination
    var timers = RunningTimers()

    init(machine: ServerMachine, destination: SIPDestination) {
        self.machine = machine
        self.destination = destination
    }
}

/// The two server machines, with the inputs both take.
private enum ServerMachine {
    case invite(InviteServerTransaction)
    case nonInvite(NonInviteServerTransaction)

    mutating func receive(_ request: SIPRequest) -> [TransactionEffect] {
        switch self {
        case .invite(var machine):
            defer { self = .invite(machine) }
            return machine.receive(request)
        case .nonInvite(var machine):
            defer { self = .nonInvite(machine) }
            return machine.receive(request)
        }
    }

    mutating func timerFired(_ timer: TransactionTimer) -> [TransactionEffect] {
        switch self {
        case .invite(var machine):
            defer { self = .invite(machine) }
            return machine.timerFired(timer)
        case .nonInvite(var machine):
            defer { self = .nonInvite(machine) }
            return machine.timerFired(timer)
        }
    }
}

/// A live client transaction, where it sends, its running timers, and whose request it carries.
private struct ClientEntry {
    var machine: ClientMachine
    let destination: SIPDestination
    var timers = RunningTimers()
    let owner: TransactionOwner
}

/// The two client machines, with the inputs both take.
private enum ClientMachine {
    case invite(InviteClientTransaction)
    case nonInvite(NonInviteClientTransaction)

    mutating func receive(_ response: SIPResponse) -> [TransactionEffect] {
        switch self {
        case .invite(var machine):
            defer { self = .invite(machine) }
            return machine.receive(response)
        case .nonInvite(var machine):
            defer { self = .nonInvite(machine) }
            return machine.receive(response)
        }
    }

    mutating func transportFailed() -> [TransactionEffect] {
        switch self {
        case .invite(var machine):
            defer { self = .invite(machine) }
            return machine.transportFailed()
        case .nonInvite(var machine):
            defer { self = .nonInvite(machine) }
            return machine.transportFailed()
        }
    }

    mutating func timerFired(_ timer: TransactionTimer) -> [TransactionEffect] {
        switch self {
        case .invite(var machine):
            defer { self = .invite(machine) }
            return machine.timerFired(timer)
        case .nonInvite(var machine):
            defer { self = .nonInvite(machine) }
            return machine.timerFired(timer)
        }
    }
}
