// libsystemd (Debian libsystemd-dev), for the SystemdSupport module only: sd_notify(3) and sd_watchdog_enabled(3).
#include <systemd/sd-daemon.h>
#include <stdint.h>

/// Sends `state` ("READY=1\nSTATUS=…") to the service manager; > 0 when sent, 0 when parleyd runs under none.
static inline int parley_sd_notify(const char *state) { return sd_notify(0, state); }

/// The watchdog interval in microseconds the service manager asks for (WATCHDOG_USEC), 0 when none.
static inline uint64_t parley_sd_watchdog_usec(void) {
    uint64_t usec = 0;
    return sd_watchdog_enabled(0, &usec) > 0 ? usec : 0;
}
