import CSystemd

/// The service manager parleyd may run under (a systemd user unit of `Type=notify`, docs/desktop.md): readiness, a
/// status line, stopping, and the watchdog, through libsystemd's sd_notify(3). Every call does nothing when parleyd
/// was not started by one (no `NOTIFY_SOCKET`).
///
/// ```
///   started ──listeners and control socket up──► ready(status:) "READY=1"
///   running ──every watchdogInterval, from the SIP loop──► watchdogAlive() "WATCHDOG=1" (a stuck loop misses it:
///            systemd restarts the unit)
///   stopping ──► stopping() "STOPPING=1"
/// ```
public enum ServiceManager {
    /// Says parleyd is ready, with `status` as its status line (systemctl status shows it); whether a manager heard it.
    @discardableResult
    public static func ready(status: String) -> Bool {
        parley_sd_notify("READY=1\nSTATUS=" + oneLine(status)) > 0
    }

    /// Says parleyd is stopping (ending calls); whether a manager heard it.
    @discardableResult
    public static func stopping(status: String = "ending calls and stopping") -> Bool {
        parley_sd_notify("STOPPING=1\nSTATUS=" + oneLine(status)) > 0
    }

    /// How often to say ``watchdogAlive()``: half the interval the manager asks for (`WatchdogSec=`), nil when it asks
    /// for none.
    public static var watchdogInterval: Duration? {
        let microseconds = parley_sd_watchdog_usec()
        return microseconds == 0 ? nil : .microseconds(Int64(microseconds / 2))
    }

    /// Says parleyd is alive (the watchdog's ping).
    public static func watchdogAlive() {
        _ = parley_sd_notify("WATCHDOG=1")
    }

    /// A status on one line (the protocol's lines are `KEY=value`).
    private static func oneLine(_ text: String) -> String {
        text.split(whereSeparator: \.isNewline).joined(separator: " ")
    }
}
