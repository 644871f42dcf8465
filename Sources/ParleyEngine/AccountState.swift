import Foundation
import SIPTransport

/// One account as the agent drives it: its registration machine and timer, and the peers whose calls came through
/// its registrar (they see us as the registrar's NAT maps us).
struct AccountState {
    /// The account as configured.
    let account: Account
    /// Its registration.
    var registration: RegistrationMachine
    /// The registration's one timer (refresh or retry).
    var registrationTimer: EngineTimer?
    /// The flow its keep-alives go to while registered (nil: none running for it).
    var keepAliveFlow: FlowKey?
}

/// A flow toward a registrar: the transport and the address (a stream's connection is found again by address).
struct FlowKey: Hashable {
    let kind: SIPTransportKind
    let address: SIPPeerAddress

    init(_ destination: SIPDestination) {
        self.kind = destination.kind
        self.address = destination.address
    }
}

/// The keep-alives on one flow, shared by every account registered over it: one NAT mapping needs one keep-alive,
/// however many accounts it carries (a thousand accounts at one provider send one ping every interval, not a
/// thousand). The first account's policy decides; when the flow fails, every account on it registers again.
struct FlowKeepAlive {
    /// The machine (``KeepAliveMachine``).
    var machine: KeepAliveMachine
    /// Its one timer.
    var timer: EngineTimer?
    /// The accounts (indices into the agent's accounts) registered over the flow.
    var accounts: Set<Int>
}
