// libsystemd (Debian libsystemd-dev), for the SystemdSupport module only: sd_notify(3) and sd_watchdog_enabled(3),
// and sd-bus(3) for the session D-Bus service. Swift cannot call sd-bus's variadic functions nor expand its vtable
// macros, so the entries of a vtable are written here, one at a time, into an array Swift allocates; no state lives
// in this header (a non-const static would not link): everything reaches Swift through `userdata`.
#include <systemd/sd-daemon.h>
#include <systemd/sd-bus.h>
#include <stdint.h>
#include <string.h>

/// Sends `state` ("READY=1\nSTATUS=…") to the service manager; > 0 when sent, 0 when parleyd runs under none.
static inline int parley_sd_notify(const char *state) { return sd_notify(0, state); }

/// The watchdog interval in microseconds the service manager asks for (WATCHDOG_USEC), 0 when none.
static inline uint64_t parley_sd_watchdog_usec(void) {
    uint64_t usec = 0;
    return sd_watchdog_enabled(0, &usec) > 0 ? usec : 0;
}

/// A method's handler and a property's getter, as sd-bus calls them.
typedef int (*parley_bus_method_handler)(sd_bus_message *message, void *userdata, sd_bus_error *error);
typedef int (*parley_bus_property_getter)(
    sd_bus *bus, const char *path, const char *interface, const char *property, sd_bus_message *reply, void *userdata,
    sd_bus_error *error);

/// The vtable's first entry. Each entry is zeroed first and only its own part of the union copied: sd-bus's header
/// warns that a vtable outside read-only data must have the unused parts of its union zeroed.
static inline void parley_bus_vtable_start(sd_bus_vtable *entry) {
    const sd_bus_vtable value = SD_BUS_VTABLE_START(0);
    memset(entry, 0, sizeof *entry);
    entry->type = value.type;
    entry->flags = value.flags;
    entry->x.start = value.x.start;
}

/// A method entry; `names` is the arguments' names, each followed by a NUL, inputs then outputs (may be "").
static inline void parley_bus_vtable_method(
    sd_bus_vtable *entry, const char *member, const char *signature, const char *result, const char *names,
    parley_bus_method_handler handler) {
    const sd_bus_vtable value = SD_BUS_METHOD_WITH_NAMES_OFFSET(member, signature, "", result, "", handler, 0, 0);
    memset(entry, 0, sizeof *entry);
    entry->type = value.type;
    entry->flags = value.flags;
    entry->x.method = value.x.method;
    entry->x.method.names = names;
}

/// A read-only property entry whose changes are announced (PropertiesChanged carries the new value).
static inline void parley_bus_vtable_property(
    sd_bus_vtable *entry, const char *member, const char *signature, parley_bus_property_getter getter) {
    const sd_bus_vtable value = SD_BUS_PROPERTY(member, signature, getter, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE);
    memset(entry, 0, sizeof *entry);
    entry->type = value.type;
    entry->flags = value.flags;
    entry->x.property = value.x.property;
}

/// The vtable's last entry.
static inline void parley_bus_vtable_end(sd_bus_vtable *entry) {
    memset(entry, 0, sizeof *entry);
    entry->type = _SD_BUS_VTABLE_END;
}

/// Whether the events sd_bus_get_events(3) gave include reading (POLLIN), or writing (POLLOUT). Written by value, as
/// CLinux writes glibc's constants: naming them here would hand poll.h's declarations to this module (see
/// docs/architecture.md on CLinux's shim).
static inline int parley_bus_wants_read(int events) { return (events & 0x001) != 0; }
static inline int parley_bus_wants_write(int events) { return (events & 0x004) != 0; }

/// A new sd_bus_error, empty.
static inline sd_bus_error parley_bus_error_null(void) {
    sd_bus_error value = SD_BUS_ERROR_NULL;
    return value;
}
