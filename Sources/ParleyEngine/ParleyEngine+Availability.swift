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

    /// Sets where incoming calls are forwarded (any thread): ``CallForwarding`` says when. With `account` (an
    /// account's name), the rules of calls made to that account (false when there is no such account). Logged when it
    /// changes.
    @discardableResult
    public func setForwarding(_ forwarding: CallForwarding, account: String? = nil) -> Bool {
        let index = account.map { name in configuration.accounts.firstIndex { $0.name == name } }
        if case .some(nil) = index { return false }
        let changed = forwardingNow.withLock { rules in
            defer { rules[account ?? ""] = forwarding }
            return rules[account ?? ""] != forwarding
        }
        guard changed else { return true }
        withAgent { [log] agent in
            if let index = index ?? nil { agent.accountForwarding[index] = forwarding } else { agent.forwarding = forwarding }
            log.info(forwarding.description + (account.map { " for calls to account \($0)" } ?? ""))
        }
        return true
    }

    /// The configuration's forwarding rules as ``forwardingNow`` keeps them: the engine's under "", each account's
    /// own under its name.
    static func forwardingRules(_ configuration: EngineConfiguration) -> [String: CallForwarding] {
        var rules = ["": configuration.forwarding]
        for account in configuration.accounts { if let own = account.forwarding { rules[account.name] = own } }
        return rules
    }

    /// The forwarding in force (any thread): the engine's, or with `account` that account's own (else the engine's).
    public func forwarding(account: String? = nil) -> CallForwarding {
        forwardingNow.withLock { rules in account.flatMap { rules[$0] } ?? rules[""] ?? CallForwarding() }
    }
}
