import Foundation
import ParleyDBus
import ParleyEngine
import ParleyIO

/// What a node watches of the machine for its calls and registrations (docs/desktop.md, "Sleep and the network"):
/// logind (a sleep inhibitor while a call is live; waking up registers again), and the kernel's default routes (a
/// change registers again, which renews the NAT bindings too). Made by the node, started with it, stopped with it.
// @unchecked Sendable: `routes` is made, used and dropped on `loop` only.
final class MachineWatch: @unchecked Sendable {
    private let engine: ParleyEngine
    private let loop: EventLoop
    private let log: EngineLog
    private let watchesRoutes: Bool
    private let sleep: SleepWatch?
    private var routes: RouteMonitor?

    /// Watches for `configuration`: logind when it serves D-Bus (and a system bus is there, else said once), the
    /// routes when it has accounts to register.
    init(_ configuration: NodeConfiguration, engine: ParleyEngine, loop: EventLoop, busLoop: EventLoop) {
        self.engine = engine
        self.loop = loop
        log = configuration.log
        watchesRoutes = !configuration.accounts.isEmpty || configuration.registration != nil
        if !configuration.dbus {
            sleep = nil
        } else if SleepWatch.systemBusReachable {
            sleep = SleepWatch(engine: engine, loop: busLoop, log: configuration.log)
        } else {
            sleep = nil
            configuration.log.info("sleep: no system bus (DBUS_SYSTEM_BUS_ADDRESS is not set): no sleep inhibitor during calls")
        }
    }

    /// Starts watching the routes (on the loop).
    func start() {
        guard watchesRoutes else { return }
        loop.execute { [self] in
            do {
                routes = try RouteMonitor(loop: loop) { [engine] changes in
                    let what = changes.isEmpty ? "routes changed (some announcements were lost)" : changes.map(\.description).joined(separator: ", ")
                    engine.networkChanged(what)
                }
            } catch {
                log.info("network: route changes are not watched: \(error)")
            }
        }
    }

    /// Stops both.
    func stop() {
        sleep?.stop()
        loop.execute { [self] in
            routes?.stop()
            routes = nil
        }
    }
}
