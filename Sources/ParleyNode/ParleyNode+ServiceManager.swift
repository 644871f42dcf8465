import ParleyIO
import SystemdSupport

extension ParleyNode {
    /// Under a systemd unit of `Type=notify` (docs/desktop.md): tells the manager the node is ready, with the
    /// addresses it listens on as its status, and feeds the watchdog from the SIP loop (a loop that stops turning
    /// misses its pings, and `WatchdogSec=` restarts the unit). Nothing without a manager.
    func announceReadiness(_ status: String) {
        guard ServiceManager.ready(status: status) else { return }
        configuration.log.info("told the service manager parleyd is ready")
        guard let interval = ServiceManager.watchdogInterval else { return }
        let loop = self.loop
        loop.execute { Self.feedWatchdog(every: interval, on: loop) }
    }

    private static func feedWatchdog(every interval: Duration, on loop: EventLoop) {
        ServiceManager.watchdogAlive()
        _ = loop.schedule(after: interval) { feedWatchdog(every: interval, on: loop) }
    }
}
