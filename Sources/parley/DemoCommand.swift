import CommandLineSupport
import ConversationKit
import Foundation

/// `parley demo`: a scripted day at the phone. A simulated network (``DemoNetwork``) answers the engine's
/// actions the way a SIP peer would; a script plays the user pressing buttons. Time is a manual clock, so the
/// two minutes of the story run in an instant and every line shows the simulated time.
enum DemoCommand {
    static let help = """
        usage: parley demo [--data-dir DIR] [--repeat N] [--quiet]

        Drives conversations through the engine — incoming answered, held and resumed, tones, an outgoing call,
        a merge and unmerge, a declined call, a missed call, a call the network never answers (its Start times
        out), remote and local hang-ups — and prints every lifecycle transition and action as it happens,
        then a summary of how each conversation ended.

        Every conversation is recorded in a call history as it ends (A connected, B connected, C declined,
        D missed, E failed); the demo prints that history at the end, as 'parley history' shows it. The story
        plays on a simulated clock that ends at the current time.

        options:
          --data-dir DIR   record into DIR/history.sqlite (created if needed; existing records are kept);
                           default: a fresh temporary directory, whose path is printed
          --repeat N       play the story N times (default 1), each time with new conversation uuids
          --quiet          print only 'recorded <uuid> <status>' for each conversation, as soon as its
                           record is durable, and nothing else (for crash tests)

        examples:
          parley demo
          parley demo --data-dir /tmp/parley && parley history --data-dir /tmp/parley
        """

    /// How long one story lasts on the simulated clock.
    static let storyLength: TimeInterval = 120

    static func run(_ raw: [String]) throws -> ExitCode {
        var arguments = Arguments(raw)
        let quiet = arguments.flag("--quiet", "-q")
        let repeats = try arguments.option("--repeat", as: "a whole number from 1 to 100000") { text in
            Int(text).flatMap { (1...100_000).contains($0) ? $0 : nil }
        } ?? 1
        let chosenDirectory = try arguments.option("--data-dir")
        if chosenDirectory?.isEmpty == true { throw UsageError("--data-dir needs a directory") }
        try arguments.finish()

        let directory = chosenDirectory ?? DemoHistory.temporaryDirectory()
        let history = try DemoHistory(
            directory: directory, configuration: DemoStory.configuration, contacts: DemoPeople.contacts, quiet: quiet)
        if !quiet {
            print(chosenDirectory == nil
                ? "Recording the call history in \(directory) (a fresh temporary directory).\n"
                : "Recording the call history in \(history.store.path).\n")
        }
        // The stories follow each other on the simulated clock; the last one ends now.
        let now = Date(timeIntervalSinceReferenceDate: Date().timeIntervalSinceReferenceDate.rounded(.down))
        let first = now.addingTimeInterval(-storyLength * TimeInterval(repeats))
        var allEnded = true
        for round in 0..<repeats {
            if repeats > 1 && !quiet { print("\(round == 0 ? "" : "\n")=== story \(round + 1) of \(repeats) ===\n") }
            let demo = try DemoStory(
                start: first.addingTimeInterval(storyLength * TimeInterval(round)), history: history, quiet: quiet)
            demo.play()
            allEnded = demo.summary() && allEnded
        }
        if !quiet { print(try history.summary()) }
        flushOutput()
        return allEnded && history.failures == 0 ? .ok : .failure
    }
}

/// The people in the demo, and the contact book that names them.
enum DemoPeople {
    static let alice = Handle(kind: .phoneNumber, value: "415-555-0100")
    static let bob = Handle(kind: .emailAddress, value: "Bob@Example.com ")
    static let carol = Handle(kind: .phoneNumber, value: "+1 (650) 555-0199", displayName: "Carol (work)")
    static let dave = Handle(kind: .generic, value: "sip:dave@127.0.0.1:5062")
    static let london = Handle(kind: .phoneNumber, value: "+44 20 7946 0018")

    static let contacts = ContactDirectory(contacts: [
        Contact(name: "Alice Liddell", handles: [Handle(kind: .phoneNumber, value: "+1 415 555 0100")]),
        Contact(name: "Bob Builder", handles: [Handle(kind: .emailAddress, value: "bob@example.com")]),
    ])
}

/// The script: when the user does what.
final class DemoStory: Sendable {
    let clock: ManualClock
    let manager: ConversationManager
    let printer: DemoPrinter
    let network: DemoNetwork
    let start: Date
    let alice = UUID(), bob = UUID(), carol = UUID(), dave = UUID(), london = UUID()

    /// The manager's configuration.
    static let configuration = ConversationManager.Configuration(defaultActionTimeout: 10)

    /// A story starting at `start` on its own manual clock, recording into `history` if given.
    init(start: Date = Date(), history: DemoHistory? = nil, quiet: Bool = false) throws {
        clock = ManualClock(start: start)
        manager = try ConversationManager(configuration: Self.configuration, clock: clock)
        self.start = clock.now()
        printer = DemoPrinter(clock: clock, contacts: DemoPeople.contacts, quiet: quiet)
        network = DemoNetwork(clock: clock, printer: printer, history: history)
        network.answersAfter = [bob: 3]
        network.neverResponds = [london]
        printer.label(alice, "A")
        printer.label(bob, "B")
        printer.label(carol, "C")
        printer.label(dave, "D")
        printer.label(london, "E")
        network.manager = manager
        manager.delegate = network
    }

    /// Schedules the user's steps on the clock and lets two minutes pass.
    func play() {
        printer.say("Parley demo: one ConversationManager, a simulated SIP network, a scripted user.")
        printer.say("Each line: simulated time, conversation, what happened.\n")
        at(0) { self.network.incoming(self.alice, from: DemoPeople.alice) }
        at(2) { self.user("answers A", [.join(conversationUUID: self.alice)]) }
        at(5) { self.user("types 1# on A", [.playTone(conversationUUID: self.alice, digits: "1#")]) }
        at(7) { self.user("holds A", [.pause(conversationUUID: self.alice, isPaused: true)]) }
        at(8) { self.user("calls Bob", [.start(conversationUUID: self.bob, handles: [DemoPeople.bob])]) }
        at(13) { self.user("resumes A", [.pause(conversationUUID: self.alice, isPaused: false)]) }
        at(14) { self.user("merges A and B", [.merge(conversationUUID: self.alice, with: self.bob)]) }
        at(16) { self.network.incoming(self.carol, from: DemoPeople.carol) }
        at(18) { self.user("declines C", [.end(conversationUUID: self.carol)]) }
        at(20) { self.network.incoming(self.dave, from: DemoPeople.dave) }
        at(22) { self.user("tries to merge C (already gone)", [.merge(conversationUUID: self.alice, with: self.carol)]) }
        at(24) { self.user("mutes A", [.mute(conversationUUID: self.alice, isMuted: true)]) }
        at(26) { self.user("splits B out of the group", [.unmerge(conversationUUID: self.bob)]) }
        at(30) { self.network.remoteHangsUp(self.bob) }
        at(35) { self.user("calls London", [.start(conversationUUID: self.london, handles: [DemoPeople.london])]) }
        at(60) { self.user("ends A", [.end(conversationUUID: self.alice)]) }
        clock.advance(by: DemoCommand.storyLength)
    }

    private func at(_ seconds: TimeInterval, _ step: @escaping @Sendable () -> Void) {
        clock.wakeUp(at: start.addingTimeInterval(seconds), step)
    }

    private func user(_ what: String, _ actions: [ConversationAction]) {
        printer.line(nil, "user \(what)")
        do {
            try manager.perform(actions)
        } catch {
            printer.line(nil, "  refused: \(error)")
        }
    }

    /// Prints how each conversation ended; false if any is still live (the story went wrong).
    func summary() -> Bool {
        printer.say("\nHow each conversation ended:")
        printer.summaryTable()
        let live = manager.conversations
        if !live.isEmpty { printer.say("still live (unexpected): \(live)") }
        return live.isEmpty
    }
}
