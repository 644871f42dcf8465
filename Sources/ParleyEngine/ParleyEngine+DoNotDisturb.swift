import Synchronization

extension ParleyEngine {
    /// Turns do-not-disturb on or off (any thread): while on, every new incoming call is refused with 486 Busy Here
    /// before it rings, and recorded (with a history) as `doNotDisturb`, unread. A change is a `doNotDisturbChanged`
    /// event; setting what is already set says nothing.
    public func setDoNotDisturb(_ on: Bool) {
        guard doNotDisturbNow.exchange(on, ordering: .acquiringAndReleasing) != on else { return }
        withAgent { [log] agent in
            agent.doNotDisturb = on
            log.info(on ? "do-not-disturb on: new calls are refused with 486 and never ring" : "do-not-disturb off")
        }
        emit(.doNotDisturbChanged(on))
    }

    /// Whether do-not-disturb is on (any thread).
    public var doNotDisturb: Bool { doNotDisturbNow.load(ordering: .acquiring) }

    /// Sets where incoming calls are forwarded (any thread): ``CallForwarding`` says when. Logged when it changes.
    public func setForwarding(_ forwarding: CallForwarding) {
        guard forwardingNow.withLock({ now in defer { now = forwarding }; return now != forwarding }) else { return }
        withAgent { [log] agent in
            agent.forwarding = forwarding
            log.info(forwarding.description)
        }
    }

    /// The forwarding in force (any thread).
    public var forwarding: CallForwarding { forwardingNow.withLock { $0 } }
}
