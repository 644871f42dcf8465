import CallHistory
import ConversationKit
import Foundation

/// Makes a realistic call history, oldest first, and keeps the tallies the query checks compare against.
///
/// Remote parties are drawn Zipf(1) from the population (a few people take most calls); 3 % of records have
/// two or three remote parties; 55 % are incoming; about 15 % of all records are missed (27 % of incoming);
/// missed calls are unread at 50 % in the newest 2 % of the history and at 1 % before; 2 % of records come
/// in merged groups of two or three consecutive conversations; 8 % are video; 90 % carry a SIP Call-ID.
struct HistoryGenerator {
    let people: [Person]
    let normalizer: HandleNormalizer
    private let zipf: ZipfSampler
    private var random: SplitMix64
    private let meanGap: Double
    /// Records from this index on are "recent": their missed calls are mostly still unread.
    private let recentFrom: Int
    private var nextStart: Double
    private var group: UUID?
    private var groupRemaining = 0
    private let localHandle = Handle(kind: .phoneNumber, value: "+14155550100", displayName: "Office")

    // Tallies over everything generated so far.
    private(set) var generated = 0
    private(set) var handleRows = 0
    private(set) var recordsPerPerson: [Int]
    private(set) var missed = 0
    private(set) var unreadMissed = 0
    private(set) var multiParty = 0
    private(set) var grouped = 0
    private(set) var newest: UUID?
    private(set) var newestMissed: UUID?
    private(set) var newestUnreadMissed: UUID?

    /// `plannedRecords` spread over two years from 2024-12-01.
    init(people: [Person], normalizer: HandleNormalizer, plannedRecords: Int, seed: UInt64) {
        self.people = people
        self.normalizer = normalizer
        zipf = ZipfSampler(count: people.count, exponent: 1.0)
        random = SplitMix64(seed: seed)
        meanGap = 730 * 86_400 / Double(plannedRecords)
        recentFrom = plannedRecords - plannedRecords / 50
        nextStart = Date(timeIntervalSince1970: 1_733_011_200).timeIntervalSinceReferenceDate
        recordsPerPerson = Array(repeating: 0, count: people.count)
    }

    /// The share of all calls that the most called person takes.
    var topShare: Double { zipf.share(of: 0) }

    /// A person drawn as calls draw them (Zipf), or uniformly over the population.
    mutating func drawPerson(weighted: Bool) -> Int {
        weighted ? zipf.draw(using: &random) : random.below(people.count)
    }

    /// A handle for looking `person` up, in a form calls never recorded (except SIP URIs, matched exactly).
    mutating func queryHandle(for person: Int) -> Handle { people[person].queryHandle(using: &random) }

    /// The next record, 63 s (on average, for a million) after the previous one.
    mutating func next() -> CallRecord {
        let index = generated
        generated += 1
        nextStart += random.exponential(mean: meanGap)
        let started = nextStart

        // Remote parties: distinct people.
        let partyRoll = random.unit()
        let partyCount = partyRoll < 0.005 ? 3 : partyRoll < 0.03 ? 2 : 1
        var chosen: [Int] = []
        while chosen.count < partyCount {
            let person = zipf.draw(using: &random)
            if !chosen.contains(person) { chosen.append(person) }
        }
        if partyCount > 1 { multiParty += 1 }
        for person in chosen { recordsPerPerson[person] += 1 }
        handleRows += partyCount
        let remote = chosen.map { RecordedHandle(people[$0].recordedHandle(using: &random), normalizer: normalizer) }

        let direction: Conversation.Direction = random.chance(0.55) ? .incoming : .outgoing
        let (connected, reason) = outcome(direction)
        let status = CallStatus(direction: direction, connected: connected, reason: reason)
        let ring = 2 + random.unit() * 23
        let connectedAt = connected ? started + ring : nil
        let ended = connectedAt.map { $0 + 5 + min(random.exponential(mean: 240), 7_200) } ?? started + ring

        var isRead = true
        if status == .missed {
            missed += 1
            isRead = !random.chance(index >= recentFrom ? 0.5 : 0.01)
            if !isRead { unreadMissed += 1 }
        }

        if groupRemaining == 0, random.chance(0.008) {
            group = random.uuid()
            groupRemaining = random.chance(0.5) ? 2 : 3
        }
        var groupUUID: UUID?
        if groupRemaining > 0 {
            groupUUID = group
            groupRemaining -= 1
            grouped += 1
        }

        let uuid = random.uuid()
        newest = uuid
        if status == .missed {
            newestMissed = uuid
            if !isRead { newestUnreadMissed = uuid }
        }
        return CallRecord(
            uuid: uuid, direction: direction, remoteHandles: remote, localHandle: localHandle, status: status,
            endedReason: reason, startedAt: Date(timeIntervalSinceReferenceDate: started),
            connectedAt: connectedAt.map(Date.init(timeIntervalSinceReferenceDate:)),
            endedAt: Date(timeIntervalSinceReferenceDate: ended), isVideo: random.chance(0.08), groupUUID: groupUUID,
            callID: random.chance(0.9) ? "\(random.hex())@pbx.example.net" : nil, isRead: isRead)
    }

    /// Whether it connected and why it ended; the status follows from these (`CallStatus.init`).
    private mutating func outcome(_ direction: Conversation.Direction) -> (Bool, Conversation.EndedReason) {
        let roll = random.unit()
        let hangUp: Conversation.EndedReason = random.chance(0.5) ? .remoteEnded : .localEnded
        switch direction {
        case .incoming:
            switch roll {
            case ..<0.273:  // missed
                let cause = random.unit()
                return (false, cause < 0.6 ? .unanswered : cause < 0.95 ? .cancelled : .remoteEnded)
            case ..<0.333: return (false, .localEnded)  // declined here
            case ..<0.373: return (false, .joinedElsewhere)
            case ..<0.383: return (false, .declinedElsewhere)
            case ..<0.398: return (false, .failed)
            default: return (true, hangUp)
            }
        case .outgoing:
            switch roll {
            case ..<0.11: return (false, random.chance(0.7) ? .localEnded : .unanswered)  // cancelled
            case ..<0.16: return (false, .busy)
            case ..<0.20: return (false, .declined)
            case ..<0.22: return (false, .failed)
            default: return (true, hangUp)
            }
        }
    }
}
