import CallHistory
import ConversationKit
import Foundation
import ParleyEngine
import ParleyIO
import SystemdSupport

/// parleyd on the session D-Bus (docs/desktop.md, "D-Bus"): the name `org.parley.Parley`, the Calls interface at
/// `/org/parley/Parley` (Dial, Recents) with an ObjectManager there, and one object per live conversation at
/// `/org/parley/Parley/Call/N` (GNOME Calls' call shape plus LiveCommunicationKit's extras).
///
/// A second view of the same engine as the control API: it hears the engine through ``ParleyEngine/observeEvents(_:)``
/// (each `conversationChanged` adds, updates — PropertiesChanged with the properties that changed — or removes an
/// object) and acts through the manager's one pipeline (`engine.perform(_:makingRoom:)` for Dial and Accept, as the
/// control API's start and join do; `engine.manager.perform` for the rest). Everything runs on `loop`; without a
/// session bus nothing fails, and it is said once.
// @unchecked Sendable: `bus`, `calls`, `paths`, `ended`, `nextNumber` and `limits` are touched on `loop` only (the
// engine's events and every D-Bus call hop or run there); the rest is immutable.
public final class ParleyDBusService: @unchecked Sendable {
    let engine: ParleyEngine
    let history: (any CallHistoryStore)?
    /// The contacts that name callers (DisplayName, notifications).
    let contacts: ContactBook
    let loop: EventLoop
    let log: EngineLog
    var bus: SessionBus?
    /// The live call objects by conversation, and their paths.
    var calls: [UUID: CallObject] = [:]
    var paths: [String: UUID] = [:]
    /// Conversations that ended (the last 1,024): a late event never brings their object back.
    var ended: [UUID] = []
    var nextNumber = 1
    var limits = ClientRateLimit()
    /// The desktop's notifications about calls.
    private(set) lazy var notifications = CallNotifications(service: self)
    private let started = ContinuousClock.now

    /// Starts the service on `loop`: connects to the session bus there and asks for ``ParleyBus/name``.
    public init(
        engine: ParleyEngine, history: (any CallHistoryStore)?, contacts: ContactBook = ContactBook(nil), loop: EventLoop,
        log: EngineLog
    ) {
        self.engine = engine
        self.history = history
        self.contacts = contacts
        self.loop = loop
        self.log = log
        engine.observeEvents { [weak self] event in
            guard let self else { return }
            switch event {
            case .conversationChanged(let transition): loop.execute { self.conversationChanged(transition.conversation) }
            case .doNotDisturbChanged:
                loop.execute { self.bus?.emitPropertiesChanged(ParleyBus.rootPath, interface: ParleyBus.calls.name, names: ["DoNotDisturb"]) }
            default: break
            }
        }
        loop.execute { self.connect() }
    }

    /// Whether a session bus is there to serve (`DBUS_SESSION_BUS_ADDRESS`, or `$XDG_RUNTIME_DIR/bus`).
    public static var sessionBusReachable: Bool { SessionBus.isReachable }

    /// Leaves the bus (on the loop).
    public func stop() {
        loop.execute { [self] in
            bus?.close()
            bus = nil
        }
    }

    private func connect() {
        switch SessionBus.connect(on: loop, log: { [log] in log.info($0) }) {
        case .failure(let error):
            log.info("D-Bus: not served (\(error.message))")
        case .success(let bus):
            do {
                try bus.addObjectManager(at: ParleyBus.rootPath)
                try bus.export(RootObject(self), interface: ParleyBus.calls, at: ParleyBus.rootPath)
            } catch {
                log.info("D-Bus: not served (\(error.message))")
                bus.close()
                return
            }
            self.bus = bus
            notifications.attach(bus)
            for object in calls.values { export(object) }
            bus.requestName(ParleyBus.name) { [log] problem in
                if let problem {
                    log.info("D-Bus: \(problem.message); the objects stay on this connection only")
                } else {
                    log.info("D-Bus: serving \(ParleyBus.name) at \(ParleyBus.rootPath) on the session bus")
                }
            }
        }
    }

    // MARK: the engine's events

    func conversationChanged(_ conversation: Conversation) {
        notifications.changed(conversation)
        if let object = calls[conversation.uuid] {
            update(object, to: conversation)
            if conversation.state == .left { remove(object) }
        } else if conversation.state != .left, !ended.contains(conversation.uuid) {
            add(conversation)
        }
    }

    /// The call object of `conversation`, made and announced now if it has none.
    @discardableResult
    func add(_ conversation: Conversation) -> CallObject {
        if let object = calls[conversation.uuid] { return object }
        let object = CallObject(
            service: self, uuid: conversation.uuid, path: ParleyBus.callPathPrefix + String(nextNumber),
            properties: CallProperties.of(conversation, name: contactName(of: conversation)))
        nextNumber += 1
        calls[conversation.uuid] = object
        paths[object.path] = conversation.uuid
        export(object)
        return object
    }

    private func export(_ object: CallObject) {
        guard let bus else { return }
        do {
            try bus.export(object, interface: ParleyBus.call, at: object.path)
            bus.emitObjectAdded(object.path)
        } catch {
            log.info("D-Bus: \(error.message)")
        }
    }

    private func update(_ object: CallObject, to conversation: Conversation) {
        let properties = CallProperties.of(conversation, name: contactName(of: conversation))
        let changed = CallProperties.changed(from: object.properties, to: properties)
        object.properties = properties
        bus?.emitPropertiesChanged(object.path, interface: ParleyBus.call.name, names: changed)
    }

    private func remove(_ object: CallObject) {
        calls.removeValue(forKey: object.uuid)
        paths.removeValue(forKey: object.path)
        ended.append(object.uuid)
        if ended.count > 1_024 { ended.removeFirst(ended.count - 1_024) }
        bus?.emitObjectRemoved(object.path)
        bus?.unexport(object.path, interface: ParleyBus.call.name)
    }

    /// The remote party's name in the contacts, if it is there.
    func contactName(of conversation: Conversation) -> String? {
        CallProperties.remote(of: conversation).flatMap(contacts.contactName(for:))
    }

    /// Who the call is with, as a notification says it: the name (the contacts', else the one the peer sent) and
    /// the address on the next line, or the address alone.
    func callerText(of conversation: Conversation) -> String {
        guard let remote = CallProperties.remote(of: conversation) else { return "Unknown caller" }
        let name = contactName(of: conversation) ?? remote.displayName
        guard !name.isEmpty, name != remote.value else { return remote.value }
        return name + "\n" + remote.value
    }

    /// Whether `call`'s sender is within its rate; refuses the call when not.
    func admit(_ call: BusMethodCall) -> Bool {
        let elapsed = started.duration(to: .now).components
        let now = Double(elapsed.seconds) + Double(elapsed.attoseconds) / 1e18
        guard limits.allow(call.sender, method: call.member, at: now) else {
            call.fail(BusError(ParleyBus.Error.tooManyRequests, limits.refusal))
            return false
        }
        return true
    }
}

/// The root object: `org.parley.Parley.Calls`.
final class RootObject: BusObject {
    private unowned let service: ParleyDBusService

    init(_ service: ParleyDBusService) { self.service = service }

    func handle(_ call: BusMethodCall) {
        guard service.admit(call) else { return }
        switch call.member {
        case "Dial": service.dial(call)
        case "Recents": service.recents(call)
        case "SetDoNotDisturb":
            guard case .bool(let on) = call.arguments.first else { return call.fail(.invalidArguments("SetDoNotDisturb takes a boolean.")) }
            service.engine.setDoNotDisturb(on)
            call.reply()
        default: call.fail(.failed("No method \(call.member)."))
        }
    }

    func property(_ name: String, of interface: String) -> Result<BusValue, BusError> {
        name == "DoNotDisturb" ? .success(.bool(service.engine.doNotDisturb)) : .failure(.invalidArguments("No property \(name)."))
    }
}

/// One live conversation's object: `org.parley.Parley.Call`, its properties as last announced.
final class CallObject: BusObject {
    private unowned let service: ParleyDBusService
    let uuid: UUID
    let path: String
    var properties: [String: BusValue]

    init(service: ParleyDBusService, uuid: UUID, path: String, properties: [String: BusValue]) {
        self.service = service
        self.uuid = uuid
        self.path = path
        self.properties = properties
    }

    func handle(_ call: BusMethodCall) {
        guard service.admit(call) else { return }
        service.act(call, on: self)
    }

    func property(_ name: String, of interface: String) -> Result<BusValue, BusError> {
        guard service.calls[uuid] != nil else { return .failure(.unknownObject("The call \(path) has ended.")) }
        return properties[name].map { .success($0) } ?? .failure(.invalidArguments("No property \(name)."))
    }
}
