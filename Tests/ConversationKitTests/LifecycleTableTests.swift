import ConversationKit
import Testing

/// The lifecycle's full transition table, written out by hand as an independent specification and checked cell
/// by cell against `ConversationLifecycle` (every direction × state × input).
@Suite("Lifecycle transition table")
struct LifecycleTableTests {
    // Columns: idle ringing joining joined paused leaving left.
    // i=idle r=ringing g=joining j=joined p=paused l=leaving x=left, - = rejected.
    static let allLive = "i r g j p l -"
    static let failsEarly = "x x x j p l -"

    /// (incoming row, outgoing row) for each input.
    static func expectedRows(_ input: LifecycleInput) -> (incoming: String, outgoing: String) {
        func both(_ row: String) -> (String, String) { (row, row) }
        switch input {
        case .reportIncoming: return ("r - - - - - -", "- - - - - - -")
        case .perform(.start): return ("- - - - - - -", "i - - - - - -")
        case .perform(.join): return ("- r - - - - -", "- - - - - - -")
        case .perform(.end): return both("l l l l l - -")
        case .perform(.pause): return both("- - - j - - -")
        case .perform(.resume): return both("- - - - p - -")
        case .perform(.mute): return both("i r g j p - -")
        case .perform(.playTone): return both("- - g j - - -")
        case .perform(.merge), .perform(.unmerge), .perform(.transfer): return both("- - - j p - -")
        case .fulfill(.start): return both("r r g j p l -")
        case .fulfill(.join): return both("- j j j p l -")
        case .fulfill(.end): return both("- - - - - x -")
        case .fulfill(.pause): return both("i r g p p l -")
        case .fulfill(.resume): return both("i r g j j l -")
        case .fulfill(.mute), .fulfill(.playTone), .fulfill(.merge), .fulfill(.unmerge), .fulfill(.transfer): return both(allLive)
        case .fail(.start), .fail(.join), .timeOut(.start), .timeOut(.join): return both(failsEarly)
        case .fail(.end), .timeOut(.end): return both("- - - - - x -")
        case .fail, .timeOut: return both(allLive)
        case .startedConnecting: return ("- g - - - - -", "g g - - - - -")
        case .connected: return ("- j j - - - -", "j j j - - - -")
        case .ended(.localEnded), .ended(.crashed): return both("- - - - - - -")  // never reported as events
        case .ended: return both("x x x x x x -")
        case .updated: return both(allLive)
        }
    }

    static func expectedReason(_ input: LifecycleInput) -> Conversation.EndedReason {
        switch input {
        case .fulfill(.end): .localEnded
        case .ended(let reason): reason
        default: .failed
        }
    }

    static let letters: [Character: Conversation.State] = [
        "i": .idle, "r": .ringing, "g": .joining, "j": .joined, "p": .paused, "l": .leaving, "x": .left,
    ]

    struct Case: CustomTestStringConvertible, Sendable {
        let direction: Conversation.Direction
        let state: Conversation.State
        let input: LifecycleInput
        let expected: Conversation.State?
        var testDescription: String { "\(direction) \(state) \(input)" }
    }

    static let cases: [Case] = Conversation.Direction.allCases.flatMap { direction in
        LifecycleInput.allInputs.flatMap { input in
            let rows = expectedRows(input)
            let tokens = (direction == .incoming ? rows.incoming : rows.outgoing).split(separator: " ")
            precondition(tokens.count == Conversation.State.allCases.count, "bad row for \(input)")
            return zip(Conversation.State.allCases, tokens).map { state, token in
                Case(direction: direction, state: state, input: input, expected: letters[token.first!])
            }
        }
    }

    @Test("every cell", arguments: cases)
    func cell(_ testCase: Case) {
        var lifecycle = ConversationLifecycle(direction: testCase.direction, state: testCase.state)
        let before = lifecycle
        do {
            let transition = try lifecycle.handle(testCase.input)
            guard let expected = testCase.expected else {
                Issue.record("accepted, expected a rejection: \(transition)")
                return
            }
            #expect(transition.to == expected)
            #expect(lifecycle.state == expected)
            #expect(transition.from == testCase.state)
            if expected == .left {
                #expect(transition.endedReason == Self.expectedReason(testCase.input))
                #expect(lifecycle.endedReason == Self.expectedReason(testCase.input))
                #expect(transition.effects.contains(.finish))
            } else {
                #expect(transition.endedReason == nil)
                #expect(!transition.effects.contains(.finish))
            }
        } catch {
            #expect(testCase.expected == nil, "rejected, expected \(String(describing: testCase.expected)): \(error)")
            #expect(lifecycle == before, "a rejected input must change nothing")
            #expect(error.state == testCase.state)
            #expect(error.input == testCase.input)
            #expect(!error.explanation.isEmpty)
        }
    }

    @Test("the table covers every state and input in both directions")
    func coverage() {
        #expect(Self.cases.count == 2 * Conversation.State.allCases.count * LifecycleInput.allInputs.count)
        #expect(TransitionTable.cells().count == Self.cases.count)
    }

    @Test("performed actions are delivered; media follows the states that carry it")
    func effects() throws {
        var lifecycle = ConversationLifecycle(direction: .incoming)
        #expect(try lifecycle.handle(.reportIncoming).effects == [])
        #expect(try lifecycle.handle(.perform(.join)).effects == [.deliverAction])
        #expect(try lifecycle.handle(.startedConnecting).effects == [.activateMedia, .markStartedConnecting])
        #expect(try lifecycle.handle(.connected).effects == [.markConnected])
        #expect(try lifecycle.handle(.perform(.pause)).effects == [.deliverAction])
        #expect(try lifecycle.handle(.fulfill(.pause)).effects == [])
        #expect(try lifecycle.handle(.fulfill(.resume)).effects == [])
        #expect(try lifecycle.handle(.perform(.end)).effects == [.deliverAction, .deactivateMedia])
        #expect(try lifecycle.handle(.fulfill(.end)).effects == [.finish])
        #expect(lifecycle.state == .left)
        #expect(lifecycle.endedReason == .localEnded)

        var outgoing = ConversationLifecycle(direction: .outgoing)
        try outgoing.handle(.perform(.start))
        try outgoing.handle(.fulfill(.start))
        #expect(try outgoing.handle(.connected).effects == [.activateMedia, .markConnected])
        #expect(try outgoing.handle(.ended(.remoteEnded)).effects == [.deactivateMedia, .finish])
    }

    @Test("left is terminal for every input")
    func terminal() {
        for direction in Conversation.Direction.allCases {
            for input in LifecycleInput.allInputs {
                var lifecycle = ConversationLifecycle(direction: direction, state: .left)
                #expect(throws: LifecycleRejection.self) { try lifecycle.handle(input) }
            }
        }
    }

    @Test("the generated Markdown table has a row per input and a column per state")
    func markdown() {
        let markdown = TransitionTable.markdown()
        let rows = markdown.split(separator: "\n").filter { $0.hasPrefix("| `") }
        #expect(rows.count == LifecycleInput.allInputs.count)
        for row in rows {
            #expect(row.split(separator: "|").count == Conversation.State.allCases.count + 1)
        }
        #expect(markdown.contains("| `perform(join)` | ✗ | in: ringing / out: ✗ |"))
        #expect(markdown.contains("| `fulfill(end)` | ✗ | ✗ | ✗ | ✗ | ✗ | **left(localEnded)** | ✗ |"))
    }
}
