import SIPMessages
import SIPSignaling

/// A transaction the timeline can fire timers at.
protocol TimedTransaction {
    mutating func timerFired(_ timer: TransactionTimer) -> [TransactionEffect]
}

extension InviteClientTransaction: TimedTransaction {}
extension NonInviteClientTransaction: TimedTransaction {}
extension InviteServerTransaction: TimedTransaction {}
extension NonInviteServerTransaction: TimedTransaction {}

/// A fake timeline: records the effects a machine returns, keeps its running timers, and fires them in order of
/// their due time (ties in start order). No clock, no sleeping.
struct Timeline {
    /// The time of the last fired timer.
    private(set) var now: Duration = .zero
    /// Every effect in order, with the time it was returned.
    private(set) var log: [(at: Duration, effect: TransactionEffect)] = []
    /// Every timer fired, with its time.
    private(set) var fired: [(at: Duration, timer: TransactionTimer)] = []
    /// Whether the machine said `terminated`.
    private(set) var isTerminated = false
    private var running: [(timer: TransactionTimer, due: Duration, order: Int)] = []
    private var starts = 0

    /// Records `effects` at the current time.
    mutating func apply(_ effects: [TransactionEffect]) {
        for effect in effects {
            log.append((now, effect))
            switch effect {
            case .startTimer(let timer, let delay):
                running.removeAll { $0.timer == timer }
                starts += 1
                running.append((timer, now + delay, starts))
            case .cancelTimer(let timer):
                running.removeAll { $0.timer == timer }
            case .terminated:
                isTerminated = true
                running.removeAll()
            case .send, .deliverRequest, .deliverResponse, .timeout, .transportError:
                break
            }
        }
    }

    /// The timers running now and when they fire.
    var runningTimers: [TransactionTimer: Duration] {
        Dictionary(uniqueKeysWithValues: running.map { ($0.timer, $0.due - now) })
    }

    /// Moves to the earliest running timer, fires it at `transaction` and records the effects; false when none runs.
    @discardableResult
    mutating func fireNext<T: TimedTransaction>(_ transaction: inout T) -> Bool {
        guard let next = running.min(by: { ($0.due, $0.order) < ($1.due, $1.order) }) else { return false }
        running.removeAll { $0.timer == next.timer }
        now = next.due
        fired.append((now, next.timer))
        apply(transaction.timerFired(next.timer))
        return true
    }

    /// Fires timers until none runs.
    mutating func runToEnd<T: TimedTransaction>(_ transaction: inout T) {
        while fireNext(&transaction) {}
    }

    /// The times at which messages were sent, with the messages.
    var sent: [(at: Duration, message: SIPMessage)] {
        log.compactMap { entry in
            if case .send(let message) = entry.effect { return (entry.at, message) }
            return nil
        }
    }

    /// The effects returned at or after `time`, other than timer bookkeeping.
    func reports(from time: Duration = .zero) -> [TransactionEffect] {
        log.filter { entry in
            guard entry.at >= time else { return false }
            switch entry.effect {
            case .startTimer, .cancelTimer, .send: return false
            case .deliverRequest, .deliverResponse, .timeout, .transportError, .terminated: return true
            }
        }.map(\.effect)
    }
}

/// Requests and responses for the tests (RFC 3665-style Alice → Bob).
enum Fixture {
    static let bob = SIPURI("sip:bob@biloxi.example.com")!
    static let alice = SIPURI("sip:alice@atlanta.example.com")!

    static func request(
        _ method: SIPMethod, branch: String? = "z9hG4bK776asdhds", transport: String = "UDP",
        host: String = "pc33.atlanta.example.com", cseq: UInt32 = 314159, toTag: String? = nil,
        routes: [String] = []
    ) -> SIPRequest {
        var extra = SIPHeaders()
        for route in routes { extra.append("Route", route) }
        var to = SIPAddress(displayName: "Bob", uri: bob)
        to.tag = toTag
        return SIPRequest(
            method: method, uri: bob, via: SIPVia(transport: transport, host: host, port: 5060, branch: branch),
            from: SIPAddress(displayName: "Alice", uri: alice, parameters: ["tag": "1928301774"]), to: to,
            callID: "a84b4c76e66710@pc33.atlanta.example.com", cseq: cseq, headers: extra)
    }

    static func seconds(_ values: Double...) -> [Duration] {
        values.map { .milliseconds(Int64(($0 * 1000).rounded())) }
    }
}
