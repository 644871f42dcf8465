import Foundation

extension GroupMessenger {
    /// One session at this node.
    struct Session: Sendable {
        /// Host: the sequencer, bound to the conversation it was activated on (and its group once merged).
        /// Member: joined through one conversation, whose peer is the host.
        enum Role: Sendable, Hashable {
            case host(anchor: UUID)
            case member(hostLeg: UUID, hostID: String)
        }

        /// A remote member of a hosted session.
        struct Member: Sendable, Hashable {
            var participant: GroupParticipant
            /// Whether it joined (a plain softphone's member is active at once).
            var joined: Bool
        }

        /// Who a stamped message came from, and so who hears how it went.
        enum Origin: Sendable, Hashable {
            /// The local frontend's send with this id.
            case local(UInt64)
            /// A member's message with its id: the host sends it a receipt.
            case remote(leg: UUID, id: UInt64)
            /// Nobody waits for it (a plain softphone's text, or a member that left).
            case nobody
        }

        /// A stamped reliable message the host waits on: the legs it has not reached yet.
        struct Pending: Sendable, Hashable {
            var origin: Origin
            var waiting: [UUID: String]
            var deliveredTo: [String] = []
            var failed: [String] = []
            var unsupported: [String] = []

            var isDone: Bool { waiting.isEmpty }

            /// The report of a local send (`leftover`: the session ended first, so what was waiting failed).
            func report(id: UInt64, session: String, seq: UInt64, leftover: Bool = false) -> GroupSendReport {
                GroupSendReport(
                    id: id, session: session, seq: seq, deliveredTo: deliveredTo.sorted(),
                    failed: (failed + (leftover ? Array(waiting.values) : [])).sorted(), unsupported: unsupported.sorted(),
                    error: nil)
            }
        }

        let id: String
        let activity: GroupActivity
        var role: Role
        var state: GroupSessionState
        let local: GroupParticipant
        /// The active participants by id, this side included.
        var active: [String: GroupParticipant]
        /// When it was made here (for listing).
        let created: Duration
        // Host only.
        var members: [UUID: Member] = [:]
        var nextSeq: UInt64 = 1
        var pending: [UInt64: Pending] = [:]
        var buckets: [String: TokenBucket] = [:]
        var journal: [GroupWire] = []
        var journalBytes = 0
        // Member only.
        var lastSeq: UInt64 = 0
        /// The frontend's sends the host has not sent a receipt for.
        var awaitingReceipts: Set<UInt64> = []

        var isHost: Bool {
            if case .host = role { return true }
            return false
        }

        /// The host's participant id.
        var hostID: String {
            switch role {
            case .host: local.id
            case .member(_, let hostID): hostID
            }
        }

        /// Takes a token from the sender's bucket, or says how long to wait.
        mutating func throttle(_ sender: String, limits: GroupLimits, now: Duration) -> Duration? {
            var bucket = buckets[sender] ?? TokenBucket(rate: limits.messagesPerSecond, burst: limits.burst, now: now)
            let wait = bucket.take(now: now)
            buckets[sender] = bucket
            return wait
        }
    }
}

/// One leg's outgoing MESSAGEs: a FIFO with at most one in flight, paused while the peer asked for a wait.
struct LegQueue: Sendable {
    /// What a queued message is for, so its answer can be accounted.
    enum Purpose: Sendable, Hashable {
        /// A stamped message the host forwards.
        case forward(seq: UInt64)
        /// A member's message on its way to the host (its send id).
        case upstream(id: UInt64)
        /// A roster, join, leave or receipt.
        case control
    }

    /// One MESSAGE body waiting for its leg, with what it is for.
    struct Outgoing: Sendable, Hashable {
        let session: String
        let purpose: Purpose
        let wire: GroupWire
        /// For a `text` message: what a plain softphone is sent ("[Alice] hi").
        let text: String?
        /// The wire's JSON, encoded once (a stamped message shares one for all its legs).
        let body: Data
        /// How often it went already and had to wait.
        var attempts = 0

        init(session: String, purpose: Purpose, wire: GroupWire, text: String?, body: Data? = nil) {
            self.session = session
            self.purpose = purpose
            self.wire = wire
            self.text = text
            self.body = body ?? wire.encoded()
        }

        var bytes: Int { body.count }

        var isUnreliable: Bool { wire.deliveryMode == .unreliable }

        func transmission(token: UInt64, format: GroupLegFormat) -> GroupTransmission {
            if format == .text, let text {
                return GroupTransmission(token: token, contentType: "text/plain;charset=utf-8", body: Data(text.utf8))
            }
            return GroupTransmission(token: token, contentType: GroupWire.contentType, body: body)
        }
    }

    /// The one MESSAGE out on the leg, by the token its answer comes back with.
    struct InFlight: Sendable, Hashable {
        let token: UInt64
        let outgoing: Outgoing
    }

    /// What waits, oldest first, from `head` on: taking the first moves `head` (no copying of what is behind it);
    /// the array is compacted once most of it is taken.
    private var items: [Outgoing] = []
    private var head = 0
    var inFlight: InFlight?
    var pausedUntil: Duration?
    /// Since when the peer has asked us to wait, answer after answer (nil once it takes a message or refuses one), and
    /// when it last did (a quiet spell longer than any wait between two such answers starts the count afresh).
    var unavailableSince: Duration?
    var lastAskedToWait: Duration?
    private(set) var queuedBytes = 0

    /// How many wait.
    var waitingCount: Int { items.count - head }
    var isEmpty: Bool { head == items.count }

    /// Queues a message. Some take the place of one that waits: an unreliable one of the same session, sender, type
    /// and recipients (newest wins), and a roster of the same session (only the latest matters).
    mutating func append(_ outgoing: Outgoing) {
        if let index = replaced(by: outgoing) {
            queuedBytes += outgoing.bytes - items[index].bytes
            items[index] = outgoing
            return
        }
        items.append(outgoing)
        queuedBytes += outgoing.bytes
    }

    /// Whether `outgoing` would take the place of one that waits.
    func replaces(_ outgoing: Outgoing) -> Bool { replaced(by: outgoing) != nil }

    private func replaced(by outgoing: Outgoing) -> Int? {
        if outgoing.isUnreliable {
            return items[head...].firstIndex {
                $0.isUnreliable && $0.session == outgoing.session && $0.wire.type == outgoing.wire.type
                    && $0.wire.source == outgoing.wire.source && $0.wire.to == outgoing.wire.to
            }
        }
        if outgoing.wire.kind == .session {
            return items[head...].firstIndex { $0.wire.kind == .session && $0.session == outgoing.session }
        }
        return nil
    }

    /// Takes the oldest.
    mutating func popFirst() -> Outgoing? {
        guard head < items.count else { return nil }
        let first = items[head]
        head += 1
        queuedBytes -= first.bytes
        if head == items.count {
            items.removeAll(keepingCapacity: true)
            head = 0
        } else if head >= 64 && head * 2 >= items.count {
            items.removeFirst(head)
            head = 0
        }
        return first
    }

    /// Puts a message back at the head (it goes again after a pause or a downgrade).
    mutating func putBack(_ outgoing: Outgoing) {
        if head > 0 {
            head -= 1
            items[head] = outgoing
        } else {
            items.insert(outgoing, at: 0)
        }
        queuedBytes += outgoing.bytes
    }

    /// Drops what waits for a session that is over.
    mutating func drop(session: String) {
        items = items[head...].filter { $0.session != session }
        head = 0
        queuedBytes = items.reduce(0) { $0 + $1.bytes }
    }

    /// Drops everything that waits.
    mutating func removeAllWaiting() {
        items.removeAll()
        head = 0
        queuedBytes = 0
    }
}
