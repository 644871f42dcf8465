import CSystemd
import Glibc
import Synchronization

/// One method call on an exported object: who sent it, what it asked, and the way to answer it once — with values,
/// or with a D-Bus error — now or later, from any thread (the answer hops onto the bus's loop).
public final class BusMethodCall: Sendable {
    /// The sender's unique bus name (`:1.42`): what per-client limits count by.
    public let sender: String
    /// The object's path.
    public let path: String
    /// The interface and the method.
    public let interface: String
    public let member: String
    /// The arguments, as the method's signature reads them.
    public let arguments: [BusValue]
    private let bus: SessionBus
    private let message: MessageBox
    private let answered = Atomic<Bool>(false)

    init(bus: SessionBus, message: OpaquePointer, interface: String, arguments: [BusValue]) {
        self.bus = bus
        self.message = MessageBox(sd_bus_message_ref(message))
        self.sender = sd_bus_message_get_sender(message).map { String(cString: $0) } ?? ""
        self.path = sd_bus_message_get_path(message).map { String(cString: $0) } ?? ""
        self.interface = interface
        self.member = sd_bus_message_get_member(message).map { String(cString: $0) } ?? ""
        self.arguments = arguments
    }

    /// Answers with `values` (the method's outputs, in order). Only the first answer counts.
    public func reply(_ values: [BusValue] = []) { answer(.success(values)) }

    /// Answers with an error. Only the first answer counts.
    public func fail(_ error: BusError) { answer(.failure(error)) }

    private func answer(_ outcome: Result<[BusValue], BusError>) {
        guard !answered.exchange(true, ordering: .acquiringAndReleasing) else { return }
        let (bus, message) = (bus, message)
        if bus.loop.inEventLoop {
            bus.reply(to: message.take(), with: outcome)
        } else {
            bus.loop.execute { bus.reply(to: message.take(), with: outcome) }
        }
    }

    deinit {
        // Never answered (the object went without replying): the caller gets an error rather than a timeout.
        guard !answered.load(ordering: .acquiring) else { return }
        let (bus, message) = (bus, message)
        let failure = BusError.failed("The call was dropped.")
        bus.loop.execute { bus.reply(to: message.take(), with: .failure(failure)) }
    }
}

/// A referenced sd_bus_message handed to the loop once.
// @unchecked Sendable: the pointer is only used on the bus's loop (`take` runs there), once.
final class MessageBox: @unchecked Sendable {
    private let message: OpaquePointer
    init(_ message: OpaquePointer) { self.message = message }
    func take() -> OpaquePointer { message }
}

/// An exported object's userdata: the bus, the object, its interface and its sd-bus slot.
final class BusExport {
    unowned let bus: SessionBus
    let object: any BusObject
    let interface: BusInterface
    var slot: OpaquePointer?

    init(bus: SessionBus, object: any BusObject, interface: BusInterface) {
        self.bus = bus
        self.object = object
        self.interface = interface
    }
}

/// A pending name request's userdata.
final class NameRequest {
    let name: String
    let done: (BusError?) -> Void

    init(name: String, done: @escaping (BusError?) -> Void) {
        self.name = name
        self.done = done
    }

    func answered(_ message: OpaquePointer) {
        if sd_bus_message_is_method_error(message, nil) != 0 {
            let error = sd_bus_message_get_error(message)
            let text = error?.pointee.message.map { String(cString: $0) } ?? "refused"
            return done(.failed("the name \(name) was refused: \(text)"))
        }
        var code: UInt32 = 0
        guard sd_bus_message_read_basic(message, CChar(bitPattern: UInt8(ascii: "u")), &code) > 0 else {
            return done(.failed("the bus's answer for \(name) could not be read"))
        }
        // 1: primary owner; 4: already the owner; 2 and 3: someone else has it.
        done(code == 1 || code == 4 ? nil : .failed("the name \(name) is owned by another program"))
    }
}

extension SessionBus {
    /// sd-bus's call into a method of an exported object.
    static func dispatch(_ message: OpaquePointer?, _ userdata: UnsafeMutableRawPointer?, _ error: UnsafeMutablePointer<sd_bus_error>?) -> Int32 {
        guard let message, let userdata else { return -EINVAL }
        let export = Unmanaged<BusExport>.fromOpaque(userdata).takeUnretainedValue()
        let member = sd_bus_message_get_member(message).map { String(cString: $0) } ?? ""
        guard let method = export.interface.method(named: member),
            let arguments = BusMessageCodec.read(message, signatures: method.inputs.map(\.signature))
        else {
            return sd_bus_error_set(error, BusError.invalidArguments("").name, "The arguments of \(member) could not be read.")
        }
        export.object.handle(BusMethodCall(bus: export.bus, message: message, interface: export.interface.name, arguments: arguments))
        return 1
    }

    /// sd-bus's read of a property of an exported object.
    static func get(
        _ property: UnsafePointer<CChar>?, _ reply: OpaquePointer?, _ userdata: UnsafeMutableRawPointer?,
        _ error: UnsafeMutablePointer<sd_bus_error>?
    ) -> Int32 {
        guard let property, let reply, let userdata else { return -EINVAL }
        let export = Unmanaged<BusExport>.fromOpaque(userdata).takeUnretainedValue()
        switch export.object.property(String(cString: property), of: export.interface.name) {
        case .success(let value):
            let result = BusMessageCodec.append(value, to: reply)
            return result < 0 ? result : 1
        case .failure(let failure):
            return sd_bus_error_set(error, failure.name, failure.message)
        }
    }
}
