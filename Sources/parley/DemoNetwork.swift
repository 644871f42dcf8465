import ConversationKit
import Foundation
import Synchronization

/// A pretend SIP network behind the demo's manager: it is the manager's delegate, performs each action the way
/// a SIP peer would answer it (after simulated delays on the manual clock), and reports network events.
final class DemoNetwork: ConversationManagerDelegate {
    /// The manager and the scripted network behaviour, behind one lock.
    private struct State {
        var manager: ConversationManager?
        var answersAfter: [UUID: TimeInterval] = [:]
        var neverResponds: Set<UUID> = []
    }
    private let state = Mutex(State())
    let clock: ManualClock
    let printer: DemoPrinter
    /// Where ended conversations are recorded, if anywhere.
    let history: DemoHistory?
    /// How long an incoming conversation rings before the network gives up on it.
    let ringTimeout: TimeInterval = 25

    init(clock: ManualClock, printer: DemoPrinter, history: DemoHistory? = nil) {
        self.clock = clock
        self.printer = printer
        self.history = history
    }

    var manager: ConversationManager? {
        get { state.withLock { $0.manager } }
        set { state.withLock { $0.manager = newValue } }
    }
    var answersAfter: [UUID: TimeInterval] {
        get { state.withLock { $0.answersAfter } }
        set { state.withLock { $0.answersAfter = newValue } }
    }
    var neverResponds: Set<UUID> {
        get { state.withLock { $0.neverResponds } }
        set { state.withLock { $0.neverResponds = newValue } }
    }

    private func after(_ seconds: TimeInterval, _ work: @escaping @Sendable (ConversationManager) -> Void) {
        clock.wakeUp(at: clock.now().addingTimeInterval(seconds)) { [self] in
            guard let manager else { return }
            work(manager)
        }
    }

    private func report(_ event: Conversation.Event, for uuid: UUID, _ manager: ConversationManager) {
        do { try manager.reportConversationEvent(event, for: uuid) } catch {
            printer.line(uuid, "network event refused: \(error)")
        }
    }

    /// An INVITE arrives: report it, and give up after the ring timeout if nobody answers.
    func incoming(_ uuid: UUID, from handle: Handle) {
        guard let manager else { return }
        printer.line(uuid, "network: INVITE from \(handle.value)")
        do {
            try manager.reportNewIncomingConversation(uuid: uuid, update: .init(members: [handle]))
        } catch {
            printer.line(uuid, "report refused: \(error)")
        }
        after(ringTimeout) { [self] manager in
            guard manager.conversation(uuid)?.state == .ringing else { return }
            printer.line(uuid, "network: nobody answered in \(Int(ringTimeout)) s → 480")
            report(.ended(clock.now(), .unanswered), for: uuid, manager)
        }
    }

    /// The remote side sends BYE.
    func remoteHangsUp(_ uuid: UUID) {
        guard let manager else { return }
        printer.line(uuid, "network: BYE from the remote side")
        report(.ended(clock.now(), .remoteEnded), for: uuid, manager)
    }

    func conversationManager(_ manager: ConversationManager, conversationChanged conversation: Conversation) {
        printer.changed(conversation)
        history?.conversationChanged(conversation, printer: printer)
    }

    func conversationManager(_ manager: ConversationManager, perform action: ConversationAction) {
        let uuid = action.conversationUUID
        printer.line(uuid, "perform \(printer.describe(action))")
        if neverResponds.contains(uuid) {
            printer.line(uuid, "network: (no response to the INVITE)")
            return
        }
        switch action.kind {
        case .start:
            after(0.1) { [self] manager in
                printer.line(uuid, "network: 180 Ringing")
                complete(action, fulfilled: true)
            }
            let answerDelay = answersAfter[uuid] ?? 2
            after(answerDelay) { [self] manager in
                printer.line(uuid, "network: 200 OK → ACK")
                report(.startedConnecting(clock.now()), for: uuid, manager)
                report(.connected(clock.now().addingTimeInterval(0.05)), for: uuid, manager)
            }
        case .join:
            after(0.1) { [self] manager in
                printer.line(uuid, "network: 200 OK sent, waiting for ACK")
                report(.startedConnecting(clock.now()), for: uuid, manager)
            }
            after(0.3) { [self] manager in
                printer.line(uuid, "network: ACK")
                report(.connected(clock.now()), for: uuid, manager)
                complete(action, fulfilled: true)
            }
        case .end:
            after(0.2) { [self] _ in
                printer.line(uuid, manager.conversation(uuid)?.hasConnected == true ? "network: BYE → 200 OK" : "network: 486 Busy Here sent")
                complete(action, fulfilled: true)
            }
        case .pause(let isPaused):
            after(0.2) { [self] _ in
                printer.line(uuid, "network: re-INVITE a=\(isPaused ? "sendonly" : "sendrecv") → 200 OK")
                complete(action, fulfilled: true)
            }
        case .playTone(let digits, _):
            after(0.1) { [self] _ in
                printer.line(uuid, "network: INFO dtmf-relay \(digits) → 200 OK")
                complete(action, fulfilled: true)
            }
        case .transfer(let target):
            after(0.2) { [self] manager in
                printer.line(uuid, "network: REFER → 202, NOTIFY 100 Trying, NOTIFY 200 OK (\(target.value) answered) → BYE")
                complete(action, fulfilled: true)
                report(.ended(clock.now(), .transferred), for: uuid, manager)
            }
        case .mute, .merge, .unmerge:
            complete(action, fulfilled: true)
        }
    }

    private func complete(_ action: ConversationAction, fulfilled: Bool) {
        let counted = fulfilled ? action.fulfill() : action.fail()
        printer.line(action.conversationUUID, "\(printer.describe(action)) \(counted ? "fulfilled" : "not counted: \(action.state)")")
    }

    func conversationManager(_ manager: ConversationManager, timedOutPerforming action: ConversationAction) {
        printer.line(action.conversationUUID, "\(printer.describe(action)) timed out")
    }

    func conversationManager(_ manager: ConversationManager, didActivateMediaFor conversation: Conversation) {
        printer.line(conversation.uuid, "media on")
    }

    func conversationManager(_ manager: ConversationManager, didDeactivateMediaFor conversation: Conversation) {
        printer.line(conversation.uuid, "media off")
    }
}
