import ConversationKit
import Foundation
import Testing

@testable import ParleyEngine

/// The call-leg machine's transition table, every (state × input): the state after each cell written out by hand as
/// an independent specification, and the rules every cell keeps.
@Suite("Call leg transition table")
struct CallLegTableTests {
    // Columns: ringing answering calling early cancelling confirmed ended.
    // r=ringing a=answering c=calling e=early k=cancelling f=confirmed x=ended.
    static let unchanged = "r a c e k f x"

    static func expectedRow(_ input: CallLegTable.Input) -> String {
        switch input {
        case .ring, .reinvite, .info, .inviteAgain, .successAgain, .trying, .cancelAnswered, .hold, .tones, .videoOn,
            .autoAnswerTimer, .retransmitTimer, .glareTimer, .reinviteGuardTimer, .tonesInStreamTimer, .message,
            .sendMessage, .reinviteAnswered, .reinviteRefused, .sessionRefreshTimer, .transfer, .referAccepted, .referRefused,
            .notifyTrying, .notifyFailure, .notifyStray, .transferTimer, .referReceived, .referredRefused:
            unchanged
        case .notifySuccess, .referredAnswered: "r a c e k x x"
        case .bye: "x x c x x x x"
        case .cancel: "x a c e k f x"
        case .ack: "r f c e k f x"
        case .ringing: "r a e e k f x"
        case .success: "r a f f x f x"
        case .busy, .inviteTimeout: "r a x x x f x"
        case .redirect, .redirectLocated: "r a c c x f x"
        case .join: "a a c e k f x"
        case .end: "x a k k k x x"
        case .ringTimer: "x a k k k f x"
        case .forwardNoAnswerTimer: "x a c e k f x"
        case .ackTimer: "r x c e k x x"
        case .mediaTimeout, .sessionExpiryTimer: "r a c e k x x"
        case .cancelGuardTimer: "r a c e x f x"
        case .left: "x a k k k x x"
        case .shutdown: "x x k k x x x"
        }
    }

    static let letters: [CallLeg.StateName: Character] = [
        .ringing: "r", .answering: "a", .calling: "c", .early: "e", .cancelling: "k", .confirmed: "f", .ended: "x",
    ]

    @Test("every cell goes to the state the specification names", arguments: CallLegTable.Input.allCases)
    func nextStates(_ input: CallLegTable.Input) {
        let row = CallLeg.StateName.allCases.map { state in
            let cell = CallLegTable.cells(of: state).first { $0.input == input }!
            return String(Self.letters[cell.next]!)
        }.joined(separator: " ")
        #expect(row == Self.expectedRow(input), "\(input.rawValue)")
    }

    @Test("a leg that ends says so once (forget), and nothing comes after its end but the pending End or a report")
    func endingIsOnce() {
        for cell in CallLegTable.allCells {
            let forgets = cell.effects.filter { $0 == .forget }.count
            let ends = cell.next == .ended && cell.state != .ended
            #expect(forgets == (ends ? 1 : 0), "\(cell.state) × \(cell.input.rawValue)")
            if ends, let index = cell.effects.firstIndex(of: .forget) {
                let after = cell.effects[(index + 1)...]
                #expect(after.count <= 1, "\(cell.state) × \(cell.input.rawValue): \(after)")
                #expect(!after.contains { if case .startTimer = $0 { true } else { false } })
            }
        }
    }

    @Test("an ended leg sends nothing but refusals, and only End is done on it")
    func endedIsInert() {
        for cell in CallLegTable.cells(of: .ended) {
            for effect in cell.effects {
                switch effect {
                case .respond(let response, _): #expect(response.statusCode == 481, "\(cell.input.rawValue)")
                case .fulfil(let action): #expect(action.action.kind.name == "end")
                case .fail, .videoSettled, .messageFailed: break
                case .send, .sendStateless, .abandon, .startTimer, .cancelTimer, .report, .performJoin, .log, .forget,
                    .tonesReceived, .sendTonesInStream, .messageReceived, .transferAsked, .followRedirect, .transferProgress:
                    Issue.record("ended × \(cell.input.rawValue) did \(effect)")
                }
            }
        }
    }

    @Test("every action is fulfilled or failed exactly once, or kept by the state it leads to")
    func actionsSettleOnce() {
        let actions: [CallLegTable.Input] = [.join, .end, .hold, .tones, .transfer]
        for state in CallLeg.StateName.allCases {
            for cell in CallLegTable.cells(of: state) where actions.contains(cell.input) {
                let settled = cell.effects.filter {
                    switch $0 {
                    case .fulfil(let action), .fail(let action, _, _): action.action.kind.name == Self.kind(of: cell.input)
                    default: false
                    }
                }.count
                // Kept: Join answers (done by the ACK); a re-INVITE, an INFO or a REFER goes out (done by its answer, or
                // for a transfer by the final NOTIFY).
                let sends = cell.effects.contains { if case .send = $0 { true } else { false } }
                let kept = (cell.input == .join && cell.state == .ringing && cell.next == .answering)
                    || ([.hold, .tones, .transfer].contains(cell.input) && sends)
                #expect(settled == (kept ? 0 : 1), "\(state) × \(cell.input.rawValue)")
            }
        }
    }

    @Test("a leg cancelling after its End settles no End again: only another End is done, at once")
    func cancellingAfterEndSettlesNothing() {
        for cell in CallLegTable.cells(of: .cancelling) {
            let settled = cell.effects.filter {
                switch $0 {
                case .fulfil(let action), .fail(let action, _, _): action.action.kind.name == "end"
                default: false
                }
            }
            #expect(settled.count == (cell.input == .end ? 1 : 0), "cancelling × \(cell.input.rawValue): \(settled)")
            #expect(!cell.effects.contains { if case .report = $0 { true } else { false } } || cell.input == .ringTimer)
        }
    }

    @Test("an End that comes while the ring timeout cancels is done once: at our CANCEL's 200, or when the INVITE ends")
    func waitingEndIsDoneOnce() {
        for answeredFirst in [true, false] {
            let context = CallLegTable.TableContext()
            var leg = CallLegTable.representative(.early, in: context)
            var effects = leg.timerFired(.ring, in: context)
            effects += leg.perform(.end(conversationUUID: leg.uuid), in: context)
            #expect(!effects.contains { if case .fulfil = $0 { true } else { false } })
            if answeredFirst {
                effects += leg.receive(CallLegTable.response(200, to: leg.invite.makeCancel()), to: .cancel, in: context)
            }
            effects += leg.receive(CallLegTable.response(487, to: leg.invite), to: .invite, in: context)
            let ends = effects.filter { if case .fulfil(let action) = $0 { action.action.kind.name == "end" } else { false } }
            #expect(ends.count == 1, "CANCEL answered first: \(answeredFirst)")
            #expect(leg.stateName == .ended)
        }
    }

    @Test("never two re-INVITEs of ours at once: with one out no input sends another; a waiting hold goes at the ACK only")
    func oneReinviteAtATime() {
        let sendsReinvite = { (cell: CallLegTable.Cell) in
            cell.effects.contains { if case .send(_, .reinvite, _) = $0 { true } else { false } }
        }
        for cell in CallLegTable.cells(of: .holdSent) { #expect(!sendsReinvite(cell), "\(cell.input.rawValue)") }
        for cell in CallLegTable.cells(of: .holdWaiting) {
            #expect(sendsReinvite(cell) == (cell.input == .ack), "\(cell.input.rawValue)")
            // However the wait ends without our re-INVITE, the hold is settled or kept: it never hangs unsaid.
            if cell.next == .ended, cell.input == .ackTimer {
                #expect(cell.effects.contains { if case .fail(let action, _, _) = $0 { action.action.kind.name == "pause" } else { false } })
            }
        }
    }

    @Test("docs/call-leg.md is the table the machine generates")
    func documentIsCurrent() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let document = try String(contentsOf: root.appending(path: "docs/call-leg.md"), encoding: .utf8)
        #expect(CallLegTable.markdown() == document, "regenerate with: parley conformance --table --call-leg > docs/call-leg.md")
    }

    private static func kind(of input: CallLegTable.Input) -> String {
        switch input {
        case .join: "join"
        case .end: "end"
        case .hold: "pause"
        case .tones: "playTone"
        case .transfer: "transfer"
        default: ""
        }
    }
}
