import ConversationKit
import Foundation
import Synchronization

// parley-bench-core: how fast the engine moves conversations through their lifecycle, and what a live
// conversation costs in memory. Single-threaded (one core). See BENCHMARKS.md.
//
//   phase 1  memory: 100,000 live (joined) conversations; RSS growth ÷ 100,000
//   phase 2  baseline: the bare ConversationLifecycle value, no manager, same 7 transitions per conversation
//   phase 3  full path: ConversationManager + delegate, start → ringing → joining → joined → paused → joined
//            → leaving → left (4 actions, 3 events per conversation), 100,000 conversations
//   phase 4  merge/unmerge churn through the manager
//
// The last two lines are `transitions_per_second: N` (phase 3) and `bytes_per_conversation: N` (phase 1).

let environment = ProcessInfo.processInfo.environment
let conversationCount = Int(environment["PARLEY_BENCH_CONVERSATIONS"] ?? "") ?? 100_000
/// PARLEY_BENCH_MANUAL_CLOCK=1 runs phase 3 on a ManualClock: no timer thread, for instruction counting.
func roundClock() -> any ConversationClock {
    environment["PARLEY_BENCH_MANUAL_CLOCK"] == "1" ? ManualClock() : SystemClock()
}

/// A delegate that fulfils every action at once, inside `perform`, and counts state changes.
final class FulfillingDelegate: ConversationManagerDelegate {
    let stateChanges = Atomic<Int>(0)
    let performed = Atomic<Int>(0)
    func conversationManager(_ manager: ConversationManager, conversationChanged conversation: Conversation) {
        stateChanges.add(1, ordering: .relaxed)
    }
    func conversationManager(_ manager: ConversationManager, perform action: ConversationAction) {
        performed.add(1, ordering: .relaxed)
        action.fulfill()
    }
}

func residentBytes() -> Int {
    guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return 0 }
    for line in status.split(separator: "\n") where line.hasPrefix("VmRSS:") {
        let kilobytes = line.split(separator: " ").dropFirst().first.flatMap { Int($0) } ?? 0
        return kilobytes * 1024
    }
    return 0
}

func seconds(_ body: () throws -> Void) rethrows -> Double {
    let start = DispatchTime.now().uptimeNanoseconds
    try body()
    return Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
}

func format(_ value: Double) -> String { String(format: "%.0f", value) }

let handle = Handle(kind: .phoneNumber, value: "+14155550100")
let clock = SystemClock()

// Phase 1: memory per live conversation.
let memoryManager = try ConversationManager(configuration: .init(), clock: clock)
let memoryDelegate = FulfillingDelegate()
memoryManager.delegate = memoryDelegate
var liveUUIDs: [UUID] = []
liveUUIDs.reserveCapacity(conversationCount)
for _ in 0..<conversationCount { liveUUIDs.append(RandomUUID.make()) }
let rssBefore = residentBytes()
for uuid in liveUUIDs {
    try memoryManager.reportNewIncomingConversation(uuid: uuid, update: .init(members: [handle]))
    try memoryManager.perform([.join(conversationUUID: uuid)])
}
let rssAfter = residentBytes()
precondition(memoryManager.conversationCount == conversationCount)
precondition(memoryManager.conversations.allSatisfy { $0.state == .joined })
let bytesPerConversation = Double(rssAfter - rssBefore) / Double(conversationCount)
print("phase 1: \(conversationCount) live joined conversations: RSS \(rssBefore / 1_048_576) MiB → \(rssAfter / 1_048_576) MiB")
memoryManager.invalidate()

// Phase 2: the bare lifecycle machine.
let path: [LifecycleInput] = [
    .perform(.start), .fulfill(.start), .startedConnecting, .connected, .perform(.pause), .fulfill(.pause),
    .perform(.resume), .fulfill(.resume), .perform(.end), .fulfill(.end),
]
var bareTransitions = 0, bareStateChanges = 0
let bareSeconds = try seconds {
    for _ in 0..<conversationCount {
        var lifecycle = ConversationLifecycle(direction: .outgoing)
        for input in path {
            bareTransitions += 1
            if try lifecycle.handle(input).changesState { bareStateChanges += 1 }
        }
    }
}
let bareRate = Double(bareTransitions) / bareSeconds
print("phase 2: bare lifecycle: \(bareTransitions) transitions (\(bareStateChanges) state changes) in \(String(format: "%.3f", bareSeconds)) s = \(format(bareRate))/s")

// Phase 3: the full manager and delegate path, five rounds on fresh managers; the median round counts.
func fullPathRound() throws -> (seconds: Double, actions: Int, callbacks: Int) {
    let manager = try ConversationManager(configuration: .init(), clock: roundClock())
    let delegate = FulfillingDelegate()
    manager.delegate = delegate
    var actionCount = 0
    let elapsed = try seconds {
        for _ in 0..<conversationCount {
            let uuid = RandomUUID.make()
            try manager.perform([.start(conversationUUID: uuid, handles: [handle])])
            let now = clock.now()
            try manager.reportConversationEvent(.startedConnecting(now), for: uuid)
            try manager.reportConversationEvent(.connected(now), for: uuid)
            try manager.perform([.pause(conversationUUID: uuid, isPaused: true)])
            try manager.perform([.pause(conversationUUID: uuid, isPaused: false)])
            try manager.perform([.end(conversationUUID: uuid)])
            actionCount += 4
        }
    }
    precondition(manager.conversationCount == 0 && manager.pendingActions.isEmpty, "every conversation must have ended")
    return (elapsed, actionCount, delegate.stateChanges.load(ordering: .relaxed))
}
var rounds: [(seconds: Double, actions: Int, callbacks: Int)] = []
for _ in 0..<5 { rounds.append(try fullPathRound()) }
rounds.sort { $0.seconds < $1.seconds }
let median = rounds[2]
// A transition is an input the lifecycle accepts (ConversationLifecycle.handle returns a LifecycleTransition):
// 10 per conversation (perform/fulfill start, startedConnecting, connected, perform/fulfill pause, resume,
// end), 7 of which change the state (ringing, joining, joined, paused, joined, leaving, left).
let fullTransitions = conversationCount * path.count
let fullStateChanges = conversationCount * 7
precondition(median.callbacks == conversationCount * 8, "expected 8 change callbacks per conversation, got \(median.callbacks)")
let fullRate = Double(fullTransitions) / median.seconds
print("phase 3: manager + delegate, 5 rounds of \(fullTransitions) transitions, \(median.actions) actions, \(median.callbacks) callbacks")
print("         rounds: " + rounds.map { format(Double(fullTransitions) / $0.seconds) }.joined(separator: ", ") + " transitions/s")
print("         median \(format(fullRate)) transitions/s (\(format(Double(fullStateChanges) / median.seconds)) state changes/s), \(format(Double(median.actions) / median.seconds)) actions/s")
print(String(format: "         full path costs %.1f× the bare lifecycle per transition", bareRate / fullRate))

// Phase 4: merge/unmerge churn between five joined conversations.
let churnManager = try ConversationManager(configuration: .init(), clock: clock)
let churnDelegate = FulfillingDelegate()
churnManager.delegate = churnDelegate
let party = (0..<5).map { _ in RandomUUID.make() }
for uuid in party {
    try churnManager.reportNewIncomingConversation(uuid: uuid, update: .init(members: [handle]))
    try churnManager.perform([.join(conversationUUID: uuid)])
}
let churnRounds = conversationCount / 10
let churnSeconds = try seconds {
    for _ in 0..<churnRounds {
        for other in party.dropFirst() { try churnManager.perform([.merge(conversationUUID: other, with: party[0])]) }
        for other in party.dropFirst() { try churnManager.perform([.unmerge(conversationUUID: other)]) }
    }
}
precondition(churnManager.groups.isEmpty)
let churnActions = churnRounds * 8
print("phase 4: merge/unmerge churn: \(churnActions) actions in \(String(format: "%.3f", churnSeconds)) s = \(format(Double(churnActions) / churnSeconds)) actions/s")

print("transitions_per_second: \(format(fullRate))")
print("bytes_per_conversation: \(format(bytesPerConversation))")
