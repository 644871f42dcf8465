import CSystemd
import Glibc
import ParleyIO

/// An object exported on a ``SessionBus``: it answers its interface's methods and properties. Called on the bus's
/// loop.
public protocol BusObject: AnyObject {
    /// A method call of the object's interface; answer it once through `call` (now, or later from any thread).
    func handle(_ call: BusMethodCall)
    /// A property's value now, or an error (an object that has gone answers UnknownObject).
    func property(_ name: String, of interface: String) -> Result<BusValue, BusError>
}

/// A connection to the user's session D-Bus (or the system bus) through sd-bus, driven by a ParleyIO loop: its descriptor is a
/// `DescriptorWatch` and its next deadline one loop timer, re-armed after every call into sd-bus (no thread of its
/// own). It requests a name, exports objects through vtables whose methods and getters come back into Swift, keeps
/// an ObjectManager and announces objects and property changes.
///
/// Loop-confined: made with ``connect(on:log:)`` on the loop thread, used there only. A bus that goes away is not
/// fatal: it is said once through `log`, and every later call does nothing.
// @unchecked Sendable: every member is touched on `loop`'s thread only (checked by `confined()`), the loop being the
// one place sd-bus runs; `BusMethodCall` hops there before replying.
public final class SessionBus: @unchecked Sendable {
    /// The loop the connection runs on.
    public let loop: EventLoop
    /// "session" or "system", for what it says.
    public let kind: String
    private(set) var bus: OpaquePointer?
    private var watch: DescriptorWatch?
    private var timer: LoopTimer?
    private var timerDeadline: UInt64 = .max
    private var exports: [String: BusExport] = [:]
    var slots: [OpaquePointer] = []
    private var vtables: [BusInterface: BusVTable] = [:]
    private var nameRequests: [NameRequest] = []
    private let log: @Sendable (String) -> Void

    /// Whether the connection is up (false once the bus went away or ``close()`` was called).
    public var isConnected: Bool { bus != nil }

    private init(loop: EventLoop, bus: OpaquePointer, kind: String, log: @escaping @Sendable (String) -> Void) {
        self.loop = loop
        self.kind = kind
        self.bus = bus
        self.log = log
    }

    /// Whether a session bus can be looked for: `DBUS_SESSION_BUS_ADDRESS` is set, or `$XDG_RUNTIME_DIR/bus` exists
    /// (where sd-bus looks without it).
    public static var isReachable: Bool {
        if let address = getenv("DBUS_SESSION_BUS_ADDRESS"), address.pointee != 0 { return true }
        guard let runtime = getenv("XDG_RUNTIME_DIR") else { return false }
        return access(String(cString: runtime) + "/bus", F_OK) == 0
    }

    /// Whether a system bus can be looked for: `DBUS_SYSTEM_BUS_ADDRESS` is set, or its usual socket exists.
    public static var isSystemBusReachable: Bool {
        if let address = getenv("DBUS_SYSTEM_BUS_ADDRESS"), address.pointee != 0 { return true }
        return access("/run/dbus/system_bus_socket", F_OK) == 0
    }

    /// Connects to the session bus (or, with `system`, the system bus: logind's) on `loop` (call on its thread); an
    /// error saying why not.
    public static func connect(
        on loop: EventLoop, system: Bool = false, log: @escaping @Sendable (String) -> Void
    ) -> Result<SessionBus, BusError> {
        precondition(loop.inEventLoop, "a bus is connected on its loop")
        var bus: OpaquePointer?
        let result = system ? sd_bus_open_system(&bus) : sd_bus_open_user(&bus)
        guard result >= 0, let bus else { return .failure(.failed("no \(system ? "system" : "session") bus: \(errorText(result))")) }
        let connection = SessionBus(loop: loop, bus: bus, kind: system ? "system" : "session", log: log)
        let fd = sd_bus_get_fd(bus)
        do {
            connection.watch = try DescriptorWatch(
                loop: loop, fd: fd, readable: true, writable: false,
                onReady: { [weak connection] _ in connection?.process() },
                onLoopShutdown: { [weak connection] in connection?.release() })
        } catch {
            sd_bus_flush_close_unref(bus)
            connection.bus = nil
            return .failure(.failed("the session bus's descriptor cannot be watched: \(error)"))
        }
        connection.process()
        return .success(connection)
    }

    /// Asks for `name` (without queueing behind another owner); `done` hears nil once it is ours, else why not.
    public func requestName(_ name: String, done: @escaping (BusError?) -> Void) {
        confined()
        guard let bus else { return done(.failed("the \(kind) bus is gone")) }
        let request = NameRequest(name: name, done: done)
        var slot: OpaquePointer?
        let result = sd_bus_request_name_async(bus, &slot, name, 0, { message, userdata, _ in
            guard let message, let userdata else { return 0 }
            Unmanaged<NameRequest>.fromOpaque(userdata).takeUnretainedValue().answered(message)
            return 0
        }, Unmanaged.passUnretained(request).toOpaque())
        guard result >= 0, let slot else { return done(.failed("the name \(name) cannot be asked for: \(Self.errorText(result))")) }
        nameRequests.append(request)
        slots.append(slot)
        rearm()
    }

    /// Keeps an ObjectManager at `path`: `GetManagedObjects` lists the objects under it, and objects added and
    /// removed there are announced with ``emitObjectAdded(_:)`` and ``emitObjectRemoved(_:)``.
    public func addObjectManager(at path: String) throws(BusError) {
        confined()
        guard let bus else { throw .failed("the \(kind) bus is gone") }
        var slot: OpaquePointer?
        let result = sd_bus_add_object_manager(bus, &slot, path)
        guard result >= 0, let slot else { throw .failed("no object manager at \(path): \(Self.errorText(result))") }
        slots.append(slot)
    }

    /// Exports `object` at `path` with `interface` (the bus keeps it until ``unexport(_:interface:)``).
    public func export(_ object: any BusObject, interface: BusInterface, at path: String) throws(BusError) {
        confined()
        guard let bus else { throw .failed("the \(kind) bus is gone") }
        let vtable = vtables[interface] ?? BusVTable(
            interface,
            method: { message, userdata, error in SessionBus.dispatch(message, userdata, error) },
            getter: { _, _, _, property, reply, userdata, error in SessionBus.get(property, reply, userdata, error) })
        vtables[interface] = vtable
        let export = BusExport(bus: self, object: object, interface: interface)
        var slot: OpaquePointer?
        let result = sd_bus_add_object_vtable(bus, &slot, path, interface.name, vtable.entries, Unmanaged.passUnretained(export).toOpaque())
        guard result >= 0, let slot else { throw .failed("\(path) cannot be exported: \(Self.errorText(result))") }
        export.slot = slot
        exports[Self.key(path, interface.name)] = export
    }

    /// Stops exporting `interface` at `path`: method calls on it get UnknownObject from now on.
    public func unexport(_ path: String, interface: String) {
        confined()
        guard let export = exports.removeValue(forKey: Self.key(path, interface)) else { return }
        if let slot = export.slot { sd_bus_slot_unref(slot) }
        export.slot = nil
    }

    /// Announces (InterfacesAdded) the object exported at `path`, with its properties.
    public func emitObjectAdded(_ path: String) { emit("InterfacesAdded for \(path)") { sd_bus_emit_object_added($0, path) } }

    /// Announces (InterfacesRemoved) that the object at `path` goes; call before ``unexport(_:interface:)``.
    public func emitObjectRemoved(_ path: String) { emit("InterfacesRemoved for \(path)") { sd_bus_emit_object_removed($0, path) } }

    /// Announces (PropertiesChanged, with their new values) that `names` of `interface` at `path` changed.
    public func emitPropertiesChanged(_ path: String, interface: String, names: [String]) {
        guard !names.isEmpty else { return }
        emit("PropertiesChanged for \(path)") { bus in
            var strings: [UnsafeMutablePointer<CChar>?] = names.map { strdup($0) } + [nil]
            defer { for string in strings { free(string) } }
            return strings.withUnsafeMutableBufferPointer { sd_bus_emit_properties_changed_strv(bus, path, interface, $0.baseAddress) }
        }
    }

    /// Closes the connection (idempotent): exports, slots and the watch go; nothing more is sent.
    public func close() {
        confined()
        guard bus != nil else { return }
        watch?.cancel()
        if let timer { loop.cancel(timer) }
        release()
    }

    /// Lets go of sd-bus (its slots, then the connection) without touching the loop: what the loop's shutdown
    /// calls, when its registrations and timers are already gone.
    private func release() {
        guard let bus else { return }
        watch = nil
        timer = nil
        for export in exports.values { if let slot = export.slot { sd_bus_slot_unref(slot) } }
        exports.removeAll()
        for slot in slots { sd_bus_slot_unref(slot) }
        slots.removeAll()
        nameRequests.removeAll()
        self.bus = nil
        sd_bus_flush_close_unref(bus)
    }

    // MARK: driving

    /// Lets sd-bus do everything it can now, then waits for what it waits for.
    func process() {
        confined()
        guard let bus else { return }
        while true {
            let result = sd_bus_process(bus, nil)
            if result < 0 { return vanished(result) }
            if result == 0 || self.bus == nil { break }
        }
        rearm()
    }

    /// Watches for what sd-bus waits for, and its next deadline, after any call into it.
    func rearm() {
        guard let bus else { return }
        let events = sd_bus_get_events(bus)
        if events < 0 { return vanished(events) }
        watch?.update(readable: parley_bus_wants_read(events) != 0, writable: parley_bus_wants_write(events) != 0)
        var deadline: UInt64 = .max
        if sd_bus_get_timeout(bus, &deadline) < 0 { deadline = .max }
        guard deadline != timerDeadline || timer == nil else { return }
        if let timer { loop.cancel(timer) }
        timer = nil
        timerDeadline = deadline
        guard deadline != .max else { return }
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        let nowMicroseconds = UInt64(now.tv_sec) * 1_000_000 + UInt64(now.tv_nsec) / 1_000
        let delay = deadline > nowMicroseconds ? deadline - nowMicroseconds : 0
        timer = loop.schedule(after: .microseconds(Int64(min(delay, UInt64(Int64.max))))) { [weak self] in
            self?.timer = nil
            self?.timerDeadline = .max
            self?.process()
        }
    }

    private func vanished(_ result: Int32) {
        log("D-Bus: the \(kind) bus went away (\(Self.errorText(result))); parleyd goes on without it")
        close()
    }

    private func emit(_ what: String, _ body: (OpaquePointer) -> Int32) {
        confined()
        guard let bus else { return }
        let result = body(bus)
        if result < 0 && result != -ENOTCONN && result != -ECONNRESET {
            log("D-Bus: \(what) not sent: \(Self.errorText(result))")
        }
        rearm()
    }

    /// Sends a method call's reply (values, or an error) and unreferences the call. On the loop.
    func reply(to message: OpaquePointer, with outcome: Result<[BusValue], BusError>) {
        confined()
        defer { sd_bus_message_unref(message) }
        guard let bus else { return }
        switch outcome {
        case .success(let values):
            var reply: OpaquePointer?
            guard sd_bus_message_new_method_return(message, &reply) >= 0, let reply else { return }
            defer { sd_bus_message_unref(reply) }
            for value in values where BusMessageCodec.append(value, to: reply) < 0 {
                return self.reply(to: sd_bus_message_ref(message), with: .failure(.failed("the reply could not be written")))
            }
            _ = sd_bus_send(bus, reply, nil)
        case .failure(let failure):
            var error = parley_bus_error_null()
            _ = sd_bus_error_set(&error, failure.name, failure.message)
            _ = sd_bus_reply_method_error(message, &error)
            sd_bus_error_free(&error)
        }
        rearm()
    }

    func confined() {
        precondition(loop.inEventLoop, "a session bus is used on its loop")
    }

    private static func key(_ path: String, _ interface: String) -> String { path + " " + interface }

    static func errorText(_ result: Int32) -> String { String(cString: strerror(-result)) }
}
