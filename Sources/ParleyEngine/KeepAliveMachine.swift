import Foundation
import SIPTransport

/// Keep-alives toward the registrar while we are registered (``KeepAlivePolicy``), as a pure state machine: a NAT
/// between us forgets an idle mapping long before a REGISTER refresh comes, and with it the way in for calls. Every
/// interval it asks for a ping on the registration's flow: CRLFCRLF (RFC 5626 §3.5.1 on TCP and TLS, where the
/// registrar answers CRLF and the transport skips it; over UDP a datagram registrars drop unread), or an OPTIONS,
/// whose silence (a transaction timeout or a transport error) means the flow is gone: the registration starts again.
/// ``SIPUserAgent`` drives it: it sends, runs the one timer, and feeds back the OPTIONS' fate.
///
/// ```
///            start(flow)             interval: ping (CRLFCRLF)
///  stopped ─────────────▶ waiting ◀──────────────────────────┐
///     ▲                    │  │ └──────────────────────────────┘
///     │ stop (any state)   │  │ interval: OPTIONS
///     └────────────────────┘  ▼
///                       awaitingAnswer ── answered (any status) ──▶ waiting
///                             │ timeout, transport error
///                             └──▶ waiting, flowFailed (REGISTER again)
///                             (interval while awaiting: no second OPTIONS, the timer runs on)
/// ```
package struct KeepAliveMachine {
    /// What the driver does.
    package enum Effect: Equatable {
        /// Send CRLFCRLF to the flow (over a stream, on its connection).
        case sendPing(to: SIPDestination)
        /// Send an OPTIONS to the registrar at the flow; its answer comes back as ``optionsAnswered()`` or
        /// ``optionsFailed(_:)``.
        case sendOptions(to: SIPDestination)
        /// (Re)start the one timer.
        case startTimer(after: Duration)
        /// Stop it.
        case cancelTimer
        /// The registrar did not answer a keep-alive: REGISTER again (the flow, or the NAT's mapping, may be new).
        case flowFailed(reason: String)
        /// A line for the log.
        case log(EngineLog.Level, String)
    }

    /// Where the keep-alives stand.
    package enum State: Equatable {
        /// Not registered: nothing is sent.
        case stopped
        /// Registered over `flow`: the timer runs to the next keep-alive.
        case waiting(flow: SIPDestination)
        /// An OPTIONS to `flow` is out and not answered yet.
        case awaitingAnswer(flow: SIPDestination)
    }

    /// How often, and what.
    package let policy: KeepAlivePolicy
    /// Where the keep-alives stand.
    package private(set) var state: State = .stopped
    /// Keep-alives sent so far (pings and OPTIONS).
    package private(set) var sent = 0

    /// Keep-alives of `policy`; stopped until ``start(toward:)``.
    package init(policy: KeepAlivePolicy) {
        self.policy = policy
    }

    // MARK: Inputs

    /// We are registered over `flow` (the registrar's destination): keep-alives start, the first one an interval from
    /// now. Nothing changes when they already run toward that flow (a refresh does not restart them).
    package mutating func start(toward flow: SIPDestination) -> [Effect] {
        switch state {
        case .waiting(let current), .awaitingAnswer(let current):
            if current == flow { return [] }
        case .stopped:
            break
        }
        state = .waiting(flow: flow)
        return [
            .cancelTimer, .startTimer(after: policy.interval),
            .log(.debug, "keep-alive: \(policy.method.rawValue) to \(flow.address) every \(policy.interval)"),
        ]
    }

    /// We are no longer registered (unregistered, or failed): nothing more is sent.
    package mutating func stop() -> [Effect] {
        if state == .stopped { return [] }
        state = .stopped
        return [.cancelTimer]
    }

    /// The timer fired: the next keep-alive is due.
    package mutating func timerFired() -> [Effect] {
        switch state {
        case .stopped:
            return []
        case .awaitingAnswer:
            // The last OPTIONS is still in its transaction (timer F outlasts short intervals): its fate decides.
            return [.startTimer(after: policy.interval)]
        case .waiting(let flow):
            sent += 1
            switch policy.method {
            case .crlf:
                return [.sendPing(to: flow), .startTimer(after: policy.interval)]
            case .options:
                state = .awaitingAnswer(flow: flow)
                return [.sendOptions(to: flow), .startTimer(after: policy.interval)]
            }
        }
    }

    /// The registrar answered our OPTIONS (whatever the status: an answer proves the path open).
    package mutating func optionsAnswered() -> [Effect] {
        guard case .awaitingAnswer(let flow) = state else { return [] }  // stopped meanwhile: nothing to do
        state = .waiting(flow: flow)
        return []
    }

    /// Our OPTIONS got no answer (`reason`: timeout, transport error): the flow is taken for dead.
    package mutating func optionsFailed(_ reason: String) -> [Effect] {
        guard case .awaitingAnswer(let flow) = state else { return [] }
        state = .waiting(flow: flow)
        let line = "keep-alive: no answer to OPTIONS from \(flow.address) (\(reason)); registering again"
        return [.log(.warning, line), .flowFailed(reason: "keep-alive OPTIONS: \(reason)")]
    }
}
