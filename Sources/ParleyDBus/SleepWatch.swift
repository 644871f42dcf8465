import ConversationKit
import Foundation
import Glibc
import ParleyEngine
import ParleyIO
import SystemdSupport

/// parleyd and logind (docs/desktop.md, "Sleep and the network"): while a call is live it holds a sleep inhibitor
/// (`org.freedesktop.login1.Manager.Inhibit("sleep:idle", "Parley", …, "block")` on the system bus, kept as the
/// descriptor logind hands back); when the machine wakes (`PrepareForSleep(false)`) every account registers again.
/// Carries out ``SleepInhibitorPlan``'s effects on `loop`; without a system bus or logind, calls go on and it is said
/// once.
// @unchecked Sendable: `bus`, `plan` and `live` are touched on `loop` only (the engine's events hop there).
public final class SleepWatch: @unchecked Sendable {
    static let destination = "org.freedesktop.login1"
    static let path = "/org/freedesktop/login1"
    static let interface = "org.freedesktop.login1.Manager"

    private let engine: ParleyEngine
    private let loop: EventLoop
    private let log: EngineLog
    private var bus: SessionBus?
    private var plan = SleepInhibitorPlan()
    /// The conversations that have not ended.
    private var live: Set<UUID> = []

    /// Starts on `loop`: connects to the system bus there and listens for PrepareForSleep.
    public init(engine: ParleyEngine, loop: EventLoop, log: EngineLog) {
        self.engine = engine
        self.loop = loop
        self.log = log
        engine.observeEvents { [weak self] event in
            guard case .conversationChanged(let transition) = event, let self else { return }
            let conversation = transition.conversation
            loop.execute { self.changed(conversation.uuid, ended: conversation.state == .left) }
        }
        loop.execute { self.connect() }
    }

    /// Whether a system bus is there to ask logind on.
    public static var systemBusReachable: Bool { SessionBus.isSystemBusReachable }

    /// Lets go of the lock and the bus (on the loop).
    public func stop() {
        loop.execute { [self] in
            live.removeAll()
            run(plan.take(.calls(live: 0)))
            bus?.close()
            bus = nil
        }
    }

    private func connect() {
        switch SessionBus.connect(on: loop, system: true, log: { [log] in log.info($0) }) {
        case .failure(let error):
            run(plan.take(.refused(error.message, absent: true)))
        case .success(let bus):
            self.bus = bus
            do {
                try bus.subscribe(interface: Self.interface, member: "PrepareForSleep", path: Self.path) { [weak self] signal in
                    guard let self, case .bool(let starting)? = signal.values.first else { return }
                    self.run(self.plan.take(.sleeping(starting)))
                }
            } catch {
                log.info("sleep: \(error.message); waking up is not noticed")
            }
            run(plan.take(.calls(live: live.count)))
        }
    }

    private func changed(_ uuid: UUID, ended: Bool) {
        let before = live.count
        if ended { live.remove(uuid) } else { live.insert(uuid) }
        guard live.count != before else { return }
        run(plan.take(.calls(live: live.count)))
    }

    private func run(_ effects: [SleepInhibitorPlan.Effect]) {
        for effect in effects {
            switch effect {
            case .ask: ask()
            case .release(let fd): close(fd)
            case .resumed: engine.networkChanged("the machine woke from sleep")
            case .log(let line): log.info(line)
            }
        }
    }

    private func ask() {
        guard let bus else { return }
        let arguments: [BusValue] = [.string("sleep:idle"), .string("Parley"), .string("A call is in progress"), .string("block")]
        bus.callMethod(destination: Self.destination, path: Self.path, interface: Self.interface, member: "Inhibit", arguments: arguments) {
            [weak self] outcome in
            guard let self else {
                if case .success(let values) = outcome, case .unixFD(let fd)? = values.first { close(fd) }
                return
            }
            switch outcome {
            case .success(let values):
                guard case .unixFD(let fd)? = values.first else {
                    return self.run(self.plan.take(.refused("logind answered \(values)", absent: false)))
                }
                self.run(self.plan.take(.granted(fd)))
            case .failure(let error):
                let absent = error.name.hasSuffix(".ServiceUnknown") || error.name.hasSuffix(".NameHasNoOwner")
                self.run(self.plan.take(.refused(absent ? "logind is not on the system bus" : error.message, absent: absent)))
            }
        }
    }
}
