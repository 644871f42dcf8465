import CSystemd
import Glibc

/// A signal another program sent that a ``SessionBus`` subscribed to: who sent it, from which object, and its values.
public struct BusSignal: Sendable {
    /// The sender's unique bus name.
    public let sender: String
    /// The object that sent it.
    public let path: String
    /// The interface and the signal's name.
    public let interface: String
    public let member: String
    /// The signal's values, in order.
    public let values: [BusValue]
}

extension SessionBus {
    /// Calls `member` of `interface` on `path` of `destination`, asynchronously: `done` hears the reply's values, or
    /// the error the other side (or the bus) answered, or a timeout after `timeout` — on the loop, once. A service
    /// that answers slowly or never holds up nothing but this `done`.
    public func callMethod(
        destination: String, path: String, interface: String, member: String, arguments: [BusValue] = [],
        timeout: Duration = .seconds(5), done: @escaping (Result<[BusValue], BusError>) -> Void
    ) {
        confined()
        guard let bus else { return done(.failure(.failed("the \(kind) bus is gone"))) }
        var message: OpaquePointer?
        guard sd_bus_message_new_method_call(bus, &message, destination, path, interface, member) >= 0, let message else {
            return done(.failure(.failed("\(interface).\(member) could not be made")))
        }
        defer { sd_bus_message_unref(message) }
        for argument in arguments where BusMessageCodec.append(argument, to: message) < 0 {
            return done(.failure(.invalidArguments("\(interface).\(member)'s arguments could not be written")))
        }
        let pending = PendingCall(done)
        var slot: OpaquePointer?
        let microseconds = UInt64(max(0, timeout.components.seconds)) * 1_000_000 + UInt64(timeout.components.attoseconds / 1_000_000_000_000)
        let userdata = Unmanaged.passRetained(pending).toOpaque()
        let result = sd_bus_call_async(bus, &slot, message, { reply, userdata, _ in
            guard let userdata else { return 0 }
            Unmanaged<PendingCall>.fromOpaque(userdata).takeUnretainedValue().answered(reply)
            return 0
        }, userdata, microseconds)
        guard result >= 0, let slot else {
            Unmanaged<PendingCall>.fromOpaque(userdata).release()
            return done(.failure(.failed("\(interface).\(member) was not sent: \(Self.errorText(result))")))
        }
        // The slot floats (the bus owns it until the reply or the timeout); it lets go of `pending` when it goes.
        sd_bus_slot_set_destroy_callback(slot) { userdata in
            if let userdata { Unmanaged<PendingCall>.fromOpaque(userdata).release() }
        }
        sd_bus_slot_set_floating(slot, 1)
        rearm()
    }

    /// Hears every signal `member` of `interface` (from `path` when given) sent on the bus, for as long as the
    /// connection lasts: `handler` runs on the loop with each one.
    public func subscribe(
        interface: String, member: String, path: String? = nil, handler: @escaping (BusSignal) -> Void
    ) throws(BusError) {
        confined()
        guard let bus else { throw .failed("the \(kind) bus is gone") }
        let subscription = SignalSubscription(handler)
        var slot: OpaquePointer?
        let userdata = Unmanaged.passRetained(subscription).toOpaque()
        let result = sd_bus_match_signal_async(bus, &slot, nil, path, interface, member, { message, userdata, _ in
            guard let message, let userdata else { return 0 }
            Unmanaged<SignalSubscription>.fromOpaque(userdata).takeUnretainedValue().received(message)
            return 0
        }, nil, userdata)
        guard result >= 0, let slot else {
            Unmanaged<SignalSubscription>.fromOpaque(userdata).release()
            throw .failed("\(interface).\(member) cannot be listened to: \(Self.errorText(result))")
        }
        sd_bus_slot_set_destroy_callback(slot) { userdata in
            if let userdata { Unmanaged<SignalSubscription>.fromOpaque(userdata).release() }
        }
        slots.append(slot)
        rearm()
    }
}

/// A method call waiting for its reply: what `callMethod` hands sd-bus as userdata.
final class PendingCall {
    private var done: ((Result<[BusValue], BusError>) -> Void)?

    init(_ done: @escaping (Result<[BusValue], BusError>) -> Void) { self.done = done }

    func answered(_ reply: OpaquePointer?) {
        guard let done else { return }
        self.done = nil
        guard let reply else { return done(.failure(.failed("no reply"))) }
        if sd_bus_message_is_method_error(reply, nil) != 0 {
            let error = sd_bus_message_get_error(reply)
            let name = error?.pointee.name.map { String(cString: $0) } ?? BusError.failed("").name
            let text = error?.pointee.message.map { String(cString: $0) } ?? "refused"
            return done(.failure(BusError(name, text)))
        }
        guard let values = BusMessageCodec.readAll(reply) else { return done(.failure(.failed("the reply could not be read"))) }
        done(.success(values))
    }
}

/// A signal subscription's userdata.
final class SignalSubscription {
    private let handler: (BusSignal) -> Void

    init(_ handler: @escaping (BusSignal) -> Void) { self.handler = handler }

    func received(_ message: OpaquePointer) {
        guard let values = BusMessageCodec.readAll(message) else { return }
        func text(_ pointer: UnsafePointer<CChar>?) -> String { pointer.map { String(cString: $0) } ?? "" }
        handler(BusSignal(
            sender: text(sd_bus_message_get_sender(message)), path: text(sd_bus_message_get_path(message)),
            interface: text(sd_bus_message_get_interface(message)), member: text(sd_bus_message_get_member(message)),
            values: values))
    }
}
