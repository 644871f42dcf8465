import ConversationKit
import Foundation
import ParleyEngine
import SystemdSupport

/// The desktop's notifications about calls (docs/desktop.md, "Notifications"): carries out ``CallNotificationPlan``'s
/// effects on the session bus — `Notify` and `CloseNotification` to org.freedesktop.Notifications, the answers and
/// its `ActionInvoked`/`NotificationClosed` signals fed back in — and its Answer, Decline and Call back through the
/// manager's pipeline. Loop-confined, like the ``ParleyDBusService`` that owns it.
final class CallNotifications {
    static let destination = "org.freedesktop.Notifications"
    static let path = "/org/freedesktop/Notifications"
    static let interface = "org.freedesktop.Notifications"
    /// How long a Notify may take before it counts as not taken (a server that answers slowly or never).
    static let replyTimeout: Duration = .seconds(5)

    private unowned let service: ParleyDBusService
    private var plan = CallNotificationPlan()

    init(service: ParleyDBusService) { self.service = service }

    /// Starts hearing the server's signals on `bus` (once per connection).
    func attach(_ bus: SessionBus) {
        do {
            try bus.subscribe(interface: Self.interface, member: "ActionInvoked", path: Self.path) { [weak self] signal in
                guard case .uint32(let id)? = signal.values.first, let key = signal.values.dropFirst().first?.text else { return }
                self?.take(.actionInvoked(id: id, key: key))
            }
            try bus.subscribe(interface: Self.interface, member: "NotificationClosed", path: Self.path) { [weak self] signal in
                guard case .uint32(let id)? = signal.values.first else { return }
                self?.take(.closed(id: id))
            }
        } catch {
            service.log.info("notifications: \(error.message); none will be posted")
        }
    }

    /// A conversation changed: what the desktop shows about it may change too.
    func changed(_ conversation: Conversation) {
        guard service.bus != nil else { return }
        take(.changed(conversation, name: service.callerText(of: conversation)))
    }

    private func take(_ input: CallNotificationPlan.Input) {
        for effect in plan.take(input) { run(effect) }
    }

    private func run(_ effect: CallNotificationPlan.Effect) {
        switch effect {
        case .post(let notice, let call): post(notice, for: call)
        case .withdraw(let id):
            service.bus?.callMethod(
                destination: Self.destination, path: Self.path, interface: Self.interface, member: "CloseNotification",
                arguments: [.uint32(id)], timeout: Self.replyTimeout) { _ in }
        case .answer(let call):
            perform(.join(conversationUUID: call), "Answer", callWaiting: true)
        case .decline(let call):
            perform(.end(conversationUUID: call), "Decline", callWaiting: false)
        case .callBack(let caller):
            perform(.start(handles: [caller], isVideo: false), "Call back", callWaiting: true)
        case .log(let line):
            service.log.info(line)
        }
    }

    private func post(_ notice: CallNotice, for call: UUID) {
        guard let bus = service.bus else { return }
        var hints: [String: BusValue] = [
            "urgency": .byte(notice.urgency), "category": .string(notice.category),
            "desktop-entry": .string("org.parley.Parley"),
        ]
        if notice.resident { hints["resident"] = .bool(true) }
        // The ring is parleyd's own (on the phone role): the server adds no sound of its own to an incoming call.
        if notice.kind == .incoming { hints["suppress-sound"] = .bool(true) }
        let arguments: [BusValue] = [
            .string("Parley"), .uint32(0), .string(notice.kind == .incoming ? "call-start" : "call-missed"),
            .string(notice.summary), .string(notice.body), .strings(notice.actions), .variants(hints), .int32(notice.timeout),
        ]
        bus.callMethod(
            destination: Self.destination, path: Self.path, interface: Self.interface, member: "Notify", arguments: arguments,
            timeout: Self.replyTimeout
        ) { [weak self] outcome in
            switch outcome {
            case .success(let values):
                guard case .uint32(let id)? = values.first else {
                    return self?.take(.postFailed(call: call, kind: notice.kind, noServer: false, reason: "Notify answered \(values)")) ?? ()
                }
                self?.take(.posted(call: call, kind: notice.kind, id: id))
            case .failure(let error):
                let absent = error.name.hasSuffix(".ServiceUnknown") || error.name.hasSuffix(".NameHasNoOwner")
                self?.take(.postFailed(call: call, kind: notice.kind, noServer: absent, reason: error.message))
            }
        }
    }

    /// Does what a notification's button asks, through the pipeline (a Start or a Join makes room as call waiting
    /// does); a refusal or failure is logged — there is no one to answer.
    private func perform(_ action: ConversationAction, _ button: String, callWaiting: Bool) {
        do {
            try service.perform(action, callWaiting: callWaiting)
        } catch {
            return service.log.info("notifications: \(button) refused: \(error)")
        }
        service.log.info("notifications: \(button) (conversation \(action.conversationUUID.uuidString))")
        action.whenSettled { [log = service.log] state in
            switch state {
            case .failed(let reason): log.info("notifications: \(button) did not work: \(reason)")
            case .timedOut: log.info("notifications: \(button) timed out")
            case .idle, .running, .complete: break
            }
        }
    }
}
