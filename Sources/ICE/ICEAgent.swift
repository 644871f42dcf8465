import CNice
import Foundation
import Synchronization

/// Where an agent finds its server-reflexive and relayed candidates (numeric addresses: names are resolved before).
public struct ICEServers: Sendable, Hashable {
    /// A STUN server (RFC 8489) for server-reflexive candidates.
    public var stun: (host: String, port: Int)? {
        get { stunServer.map { ($0.host, $0.port) } }
        set { stunServer = newValue.map { Endpoint(host: $0.host, port: $0.port) } }
    }
    /// A TURN server (RFC 8656) for relayed candidates.
    public var turn: TURNServer?
    private var stunServer: Endpoint?

    /// An address and port.
    struct Endpoint: Sendable, Hashable {
        var host: String
        var port: Int
    }

    /// Servers; none gives host candidates only.
    public init(stun: (host: String, port: Int)? = nil, turn: TURNServer? = nil) {
        self.stunServer = stun.map { Endpoint(host: $0.host, port: $0.port) }
        self.turn = turn
    }
}

/// A TURN server and the long-term credentials it takes (the password is never printed).
public struct TURNServer: Sendable, Hashable, CustomStringConvertible {
    /// Its numeric address.
    public var host: String
    /// Its port (3478 by default).
    public var port: Int
    /// Whether the allocation is requested over TCP (else UDP).
    public var overTCP: Bool
    /// The user name.
    public var user: String
    /// The password.
    public var password: String

    /// A server.
    public init(host: String, port: Int = 3478, overTCP: Bool = false, user: String, password: String) {
        (self.host, self.port, self.overTCP, self.user, self.password) = (host, port, overTCP, user, password)
    }

    /// `turn:HOST:PORT?transport=…` as user NAME: never the password.
    public var description: String { "turn:\(host):\(port)?transport=\(overTCP ? "tcp" : "udp") as user \(user)" }
}

/// The kind of a candidate (RFC 8445 §5.1.1).
public enum ICECandidateType: String, Sendable, Hashable, Codable {
    /// An address of one of our interfaces.
    case host
    /// Our address as a STUN server saw it: the NAT's mapping.
    case srflx
    /// Our address as the peer's checks saw it (learnt during checks).
    case prflx
    /// An address on a TURN server that relays for us.
    case relay

    init(nice: Int32) {
        switch UInt32(nice) {
        case NICE_CANDIDATE_TYPE_SERVER_REFLEXIVE.rawValue: self = .srflx
        case NICE_CANDIDATE_TYPE_PEER_REFLEXIVE.rawValue: self = .prflx
        case NICE_CANDIDATE_TYPE_RELAYED.rawValue: self = .relay
        default: self = .host
        }
    }
}

/// The pair of candidates a component's checks selected: where our packets leave from and where they go.
public struct ICESelectedPair: Sendable, Hashable {
    /// Our candidate's kind.
    public var localType: ICECandidateType
    /// Our candidate's address and port (`203.0.113.11:50000`).
    public var local: String
    /// The peer's candidate's kind.
    public var remoteType: ICECandidateType
    /// The peer's candidate's address and port.
    public var remote: String
}

/// Where an agent's checks stand, for one component or the whole stream.
public enum ICEState: String, Sendable, Hashable {
    /// Gathering candidates, or waiting for the peer's.
    case gathering
    /// Checks are running.
    case checking
    /// A pair works (checks may still go on).
    case connected
    /// A pair is selected and checks are over.
    case ready
    /// Every check failed, or consent was lost (RFC 7675).
    case failed

    init(nice: Int32) {
        switch UInt32(nice) {
        case NICE_COMPONENT_STATE_CONNECTING.rawValue: self = .checking
        case NICE_COMPONENT_STATE_CONNECTED.rawValue: self = .connected
        case NICE_COMPONENT_STATE_READY.rawValue: self = .ready
        case NICE_COMPONENT_STATE_FAILED.rawValue: self = .failed
        default: self = .gathering
        }
    }
}

/// What an agent has reported, read at once.
public struct ICEReport: Sendable, Hashable {
    /// Grows with every report: a reader compares it with the last it saw.
    public var version: UInt32
    /// Whether every server answered (or gave up): the candidates are complete.
    public var gatheringDone: Bool
    /// Each component's state (RTP first).
    public var states: [ICEState]
    /// Each component's selected pair, once it has one.
    public var pairs: [ICESelectedPair?]
    /// Packets that arrived while no pipeline read the agent (media before it plays, or between two).
    public var dropped: Int

    /// The stream's state: failed when any component failed, else the least advanced component's.
    public var state: ICEState {
        if states.contains(.failed) { return .failed }
        let order: [ICEState] = [.gathering, .checking, .connected, .ready]
        return states.min { order.firstIndex(of: $0)! < order.firstIndex(of: $1)! } ?? .gathering
    }
}

/// The process's agents' GLib context, iterated by one thread of its own (docs/media.md, "ICE").
final class ICEContext: @unchecked Sendable {
    // @unchecked Sendable: the pointer is set once; GLib's context is thread-safe.
    let context: OpaquePointer

    /// The process's one context (its thread starts with the first agent).
    static let shared = ICEContext()

    private init() { context = parley_ice_context_start() }
}

/// Where a reader learns that its agents reported something: an eventfd each of its agents writes (a duplicate of it
/// per agent, closed when the agent is gone, so a report never writes to a descriptor that was closed or reused).
/// One per reader: readers sharing one would drain each other's news.
public final class ICENotifications: @unchecked Sendable {
    // @unchecked Sendable: the descriptor is set once; reading an eventfd is thread-safe.
    /// Readable when an agent has reported something (read it with ``drain()``, then read the agents' reports).
    public let descriptor: Int32

    /// A new eventfd.
    public init() throws(ICEError) {
        descriptor = eventfd(0, Int32(EFD_NONBLOCK | EFD_CLOEXEC))
        guard descriptor >= 0 else { throw ICEError("no eventfd for ICE reports") }
    }

    deinit { close(descriptor) }

    /// Empties the eventfd.
    public func drain() {
        var count: UInt64 = 0
        _ = read(descriptor, &count, MemoryLayout<UInt64>.size)
    }
}

/// Why an agent could not be made or told something.
public struct ICEError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What went wrong.
    public let description: String
    init(_ description: String) { self.description = description }
}

/// One call's ICE agent (libnice): one stream of one component (rtcp-mux) or two (RTP, RTCP), its candidates and
/// credentials, the peer's, and what its checks found. Methods may be called from any thread.
///
/// ```
///   init ──gather()──► gathering ──(servers answered, or the caller stops waiting)──► candidates in our SDP
///        ──setRemote(…)──► checking ──► connected/ready (a selected pair per component) ──consent lost──► failed
///                                   └──► failed (every check failed)
/// ```
public final class ICEAgent: @unchecked Sendable {
    // @unchecked Sendable: `handle` is libnice's, whose API is thread-safe; the report is read under its mutex.
    private let handle: UnsafeMutablePointer<ParleyICE>
    /// 1 (rtcp-mux) or 2.
    public let components: Int

    /// An agent controlling the checks (the offerer) or not, with host candidates on `localAddresses` only (all
    /// interfaces when empty), component N's bound on `firstPort + N - 1` (any port when nil), and `servers` for the
    /// others, announcing its reports on `notifications`. Gathering starts with ``gather()``.
    public init(
        controlling: Bool, components: Int = 2, localAddresses: [String] = [], firstPort: Int? = nil,
        servers: ICEServers = ICEServers(), notifications: ICENotifications
    ) throws(ICEError) {
        guard let made = parley_ice_new(
            ICEContext.shared.context, notifications.descriptor, controlling ? 1 : 0, UInt32(components),
            UInt32(firstPort ?? 0))
        else { throw ICEError("libnice could not make an agent") }
        // Everything that may fail happens before the stored properties are set: a throw after that would run deinit,
        // freeing the agent a second time.
        if let problem = Self.configure(made, localAddresses: localAddresses, servers: servers) {
            parley_ice_free(made)
            throw problem
        }
        handle = made
        self.components = components
    }

    /// Gives a new agent its local addresses and servers; the problem, if one was refused.
    private static func configure(
        _ agent: UnsafeMutablePointer<ParleyICE>, localAddresses: [String], servers: ICEServers
    ) -> ICEError? {
        for address in localAddresses where parley_ice_add_local_address(agent, address) != 0 {
            return ICEError("not a local address for ICE: \(address)")
        }
        // With a TURN server the STUN server is left out: libnice takes whatever comes from the TURN server's address
        // (any port) as TURN, and fails another server's Binding answers once a TURN server is set, so gathering
        // would wait for them in vain (2 s a call, measured by Scripts/bench-ice); the TURN allocation's answer gives
        // the server-reflexive candidate anyway.
        if let stun = servers.stun, servers.turn == nil {
            parley_ice_set_stun(agent, stun.host, UInt32(stun.port))
        }
        if let turn = servers.turn,
            parley_ice_set_turn(agent, turn.host, UInt32(turn.port), turn.user, turn.password, turn.overTCP ? 1 : 0) != 0
        {
            return ICEError("libnice refused the TURN server \(turn)")
        }
        return nil
    }

    /// Whether ``close()`` ended the agent already.
    private let closed = Atomic<Bool>(false)

    deinit { if !closed.load(ordering: .acquiring) { parley_ice_free(handle) } }

    /// Ends the agent now and waits until its sockets are closed (nothing else may hold it: no pipeline), so that its
    /// ports can be bound again at once; the agent must not be used after.
    public func close() {
        guard !closed.exchange(true, ordering: .acquiringAndReleasing) else { return }
        parley_ice_free_and_wait(handle)
    }

    /// Starts gathering: host candidates at once, the servers' as they answer.
    public func gather() throws(ICEError) {
        guard parley_ice_gather(handle) == 0 else { throw ICEError("gathering could not start (no usable local address?)") }
    }

    /// Our ufrag and password (RFC 8839 `a=ice-ufrag`, `a=ice-pwd`).
    public var localCredentials: (ufrag: String, password: String)? {
        var ufrag: UnsafeMutablePointer<CChar>?, password: UnsafeMutablePointer<CChar>?
        guard parley_ice_local_credentials(handle, &ufrag, &password) == 0, let ufrag, let password else { return nil }
        defer { parley_ice_free_text(ufrag); parley_ice_free_text(password) }
        return (String(cString: ufrag), String(cString: password))
    }

    /// Our candidates gathered so far, as `a=candidate:` values (without the `candidate:` name's `a=`).
    public var localCandidates: [String] {
        guard let text = parley_ice_local_candidates(handle) else { return [] }
        defer { parley_ice_free_text(text) }
        return String(cString: text).split(separator: "\n").map { String($0.dropFirst("candidate:".count)) }
    }

    /// The candidate for `component`'s c=/m= (relayed, else server-reflexive, else host).
    public func defaultCandidate(component: Int = 1) -> (host: String, port: Int)? {
        var address = [CChar](repeating: 0, count: 64)
        var port: UInt32 = 0
        guard parley_ice_default_candidate(handle, UInt32(component), &address, address.count, &port) == 0 else { return nil }
        return (String(decoding: address.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self), Int(port))
    }

    /// The peer's credentials and candidates (`candidate:` values, as ``localCandidates`` spells them); an ICE-lite
    /// peer makes us controlling. Returns how many candidates the agent took.
    @discardableResult
    public func setRemote(ufrag: String, password: String, candidates: [String], peerIsLite: Bool = false) throws(ICEError) -> Int {
        let lines = candidates.map { "candidate:" + $0 }.joined(separator: "\n")
        let taken = parley_ice_set_remote(handle, ufrag, password, lines, peerIsLite ? 1 : 0)
        guard taken >= 0 else { throw ICEError("the peer's ICE credentials were refused") }
        return Int(taken)
    }

    /// An ICE restart (RFC 8445 §9): new local credentials; the peer's candidates are forgotten until
    /// ``setRemote(ufrag:password:candidates:peerIsLite:)`` gives its new ones. The local candidates stay, and the
    /// pair in use carries media until the checks select a new one; the report shows no pair until then.
    public func restart() throws(ICEError) {
        guard parley_ice_restart(handle) == 0 else { throw ICEError("libnice would not restart the stream") }
    }

    /// Whether the agent controls the checks now (the offerer, or an ICE-lite peer's answerer, after any role
    /// conflict was resolved).
    public var isControlling: Bool { parley_ice_controlling(handle) != 0 }

    /// A peer without ICE (its description had none): each component sends to the peer's c= address and its port
    /// (RTP's, then RTCP's) as if checks had selected it, and takes what arrives.
    public func sendWithoutChecks(to host: String, ports: [Int]) throws(ICEError) {
        for (index, port) in ports.prefix(components).enumerated()
        where parley_ice_force_remote(handle, UInt32(index + 1), host, UInt32(port)) != 0 {
            throw ICEError("libnice would not send to \(host):\(port)")
        }
    }

    /// What the agent has reported so far.
    public var report: ICEReport {
        var done: Int32 = 0
        var dropped: Int64 = 0
        var raw = (ParleyICEComponent(), ParleyICEComponent())
        let version = withUnsafeMutablePointer(to: &raw) { pointer in
            pointer.withMemoryRebound(to: ParleyICEComponent.self, capacity: 2) { parley_ice_read(handle, &done, $0, &dropped) }
        }
        let read = [raw.0, raw.1].prefix(components)
        return ICEReport(
            version: version, gatheringDone: done != 0, states: read.map { ICEState(nice: $0.state) },
            pairs: read.map { component in
                guard component.selected != 0 else { return nil }
                return ICESelectedPair(
                    localType: ICECandidateType(nice: component.local_type),
                    local: Self.text(component.local_address, port: component.local_port),
                    remoteType: ICECandidateType(nice: component.remote_type),
                    remote: Self.text(component.remote_address, port: component.remote_port))
            }, dropped: Int(dropped))
    }

    /// `host:port` (`[host]:port` for IPv6) from a C character array.
    private static func text<Characters>(_ address: Characters, port: UInt32) -> String {
        let host = withUnsafeBytes(of: address) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        return host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
    }

    /// The agent as nicesrc's and nicesink's `agent` property wants it, and its stream's id.
    package var object: UnsafeMutableRawPointer { parley_ice_object(handle) }
    /// The stream's id in the agent.
    package var stream: Int { Int(parley_ice_stream(handle)) }

    /// Reads the components again with the agent's own (dropping) receiver: call after a pipeline that read them
    /// stopped, so checks and consent go on being answered.
    package func reattach() { parley_ice_reattach(handle) }
}
