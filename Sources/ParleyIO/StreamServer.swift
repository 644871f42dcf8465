import Foundation
import Glibc

/// One connection of a ``StreamServer``, numbered from 1 in the order of acceptance.
package typealias StreamClientID = UInt64

/// Where a server's connection is in its life.
package enum StreamClientStage: Sendable, Hashable {
    /// Connected; it must authenticate (the owner's hello) before the hello deadline. It holds no client slot, only a
    /// place in the pending budget (``StreamServer/Limits/maxPending``, ``StreamServer/Limits/maxPendingPerSource``).
    case awaitingHello
    /// The owner accepted it (``StreamServer/authenticate(_:)``).
    case authenticated
    /// Accepted while every client slot was taken: kept only until the owner has told it why or let it in (by the hello
    /// deadline at the latest). Like `awaitingHello`, it holds a place in the pending budget, not a slot.
    case turnedAway
}

/// What the owner of a ``StreamServer`` hears, on the loop thread. It may send, close and authenticate from inside
/// every callback.
package protocol StreamServerDelegate: AnyObject {
    /// How each connection's byte stream is cut into frames.
    associatedtype Codec: StreamCodec

    /// A connection came in while a client slot was free (stage `awaitingHello`, or `authenticated` when the server has
    /// no hello deadline).
    func server(_ server: StreamServer<Self>, accepted client: StreamClientID, from peer: SocketAddress?)
    /// A connection came in while every client slot was taken (stage `turnedAway`): tell it why and close it
    /// (flushing), or let it in later with ``StreamServer/admit(_:)`` once another has made room.
    func server(_ server: StreamServer<Self>, turnedAway client: StreamClientID)
    /// A frame from a connection, whatever its stage.
    func server(_ server: StreamServer<Self>, received frame: Codec.Frame, from client: StreamClientID)
    /// A connection's stream cannot be framed any further. It is closed right after unless the owner closes it.
    func server(_ server: StreamServer<Self>, failedToDecode failure: Codec.Failure, from client: StreamClientID)
    /// A connection still awaiting its hello (or turned away) reached the hello deadline.
    func server(_ server: StreamServer<Self>, helloTimedOut client: StreamClientID)
    /// A connection stopped being usable (not called for connections ``StreamServer/stop(reason:lastWords:)`` closes);
    /// a pending one displaced by a newcomer is reported closed for ``StreamServer/displacedReason`` at once (the server
    /// holds the connection itself, unread, until its hello deadline).
    func server(_ server: StreamServer<Self>, closed client: StreamClientID, stage: StreamClientStage, reason: StreamCloseReason)
}

/// A listening socket and the connections it accepted, on an ``EventLoop``: the accept loop, a cap on the number of
/// authenticated connections (client slots), a hello deadline per connection and a separate small budget for the
/// connections still saying hello (``PendingConnections``: a total and a per-source bound, a newcomer beyond either
/// displacing an older pending connection, which is set aside unread until its hello deadline; so idle connections
/// that never say hello hold no slot and cannot keep a client from reaching its hello), and lingering (flushing) closes that ``stop(reason:lastWords:)`` cuts short. The control API's Unix socket and WebSocket servers and the push simulator are all one of these.
/// Loop-confined.
package final class StreamServer<Delegate: StreamServerDelegate>: StreamListenerDelegate, StreamChannelDelegate {
    package typealias Codec = Delegate.Codec
    package typealias Tag = Never
    /// The channel of one connection.
    package typealias Channel = StreamChannel<StreamServer<Delegate>>

    /// The server's bounds.
    package struct Limits: Sendable {
        /// Authenticated connections served at once (client slots); a hello beyond them is the owner's to refuse.
        package var maxClients: Int
        /// Connections still saying hello (awaiting it, or turned away) at once, whatever their source.
        package var maxPending: Int
        /// Connections still saying hello at once from one ``StreamSource``.
        package var maxPendingPerSource: Int
        /// How long a connection may take to authenticate; nil: no hello (connections are authenticated at once).
        package var helloTimeout: Duration?
        /// Each connection's queue, linger and timeouts.
        package var channel: StreamChannelOptions
        /// The kernel send buffer of accepted sockets; nil keeps the system's.
        package var socketSendBufferSize: Int?

        /// Limits from their parts.
        package init(
            maxClients: Int, helloTimeout: Duration?, channel: StreamChannelOptions, socketSendBufferSize: Int? = nil,
            maxPending: Int = .max, maxPendingPerSource: Int = .max
        ) {
            self.maxClients = maxClients
            self.maxPending = maxPending
            self.maxPendingPerSource = maxPendingPerSource
            self.helloTimeout = helloTimeout
            self.channel = channel
            self.socketSendBufferSize = socketSendBufferSize
        }
    }

    private struct Client {
        let channel: Channel
        var stage: StreamClientStage
        var helloTimer: LoopTimer?
        /// When it was accepted (monotonic nanoseconds).
        let acceptedAt = monotonicNanoseconds()
    }

    /// The loop the server runs on.
    package let loop: EventLoop
    private let limits: Limits
    private let makeCodec: () -> Codec
    /// With it, every accepted connection handshakes TLS (as the server) before its frames flow.
    private let tls: TLSContext?
    private weak var delegate: Delegate?
    private var listener: StreamListener?
    private var clients: [StreamClientID: Client] = [:]
    /// The connections that have not said hello yet.
    private var pending: PendingConnections
    /// Pending connections that made room for a newer one (for statistics and tests).
    package private(set) var displacedCount = 0
    /// Said (as the close reason) to a pending connection a newcomer displaced.
    package static var displacedReason: String { "displaced by a newer connection still saying hello" }
    /// Displaced connections, oldest first: no longer read, held open until their hello deadline and then closed. A
    /// peer that reopens whatever is closed would otherwise connect again at once, and each reconnection would
    /// displace the next pending connection of its address: a flood churning so fast that a client of the same
    /// address not yet scheduled to send its hello is displaced before it can. Held, the flood's connections come
    /// back only at their deadlines.
    private var setAside: [(id: StreamClientID, channel: Channel, timer: LoopTimer?)] = []
    /// The most connections held so (beyond, the oldest is closed at once): four times the pending budget.
    private var maxSetAside: Int { limits.maxPending > Int.max / 4 ? Int.max : limits.maxPending * 4 }
    /// Connections closed but still flushing their last bytes.
    private var lingering: [StreamClientID: Channel] = [:]
    private var nextID: StreamClientID = 1
    private var stopped = false

    /// Serves the listening socket `fd` on `loop` (on its thread); over TLS with `tls` (a server context).
    package init(
        loop: EventLoop, listening fd: Int32, limits: Limits, tls: TLSContext? = nil, makeCodec: @escaping () -> Codec,
        delegate: Delegate
    ) throws(IOError) {
        self.loop = loop
        self.limits = limits
        self.tls = tls
        self.makeCodec = makeCodec
        self.delegate = delegate
        pending = PendingConnections(maxTotal: limits.maxPending, maxPerSource: limits.maxPendingPerSource)
        listener = try StreamListener(loop: loop, fd: fd, delegate: self)
    }

    /// Connections that authenticated, in no particular order.
    package var authenticatedClients: [StreamClientID] {
        clients.compactMap { $0.value.stage == .authenticated ? $0.key : nil }
    }

    /// The stage of a live connection; nil once it closed.
    package func stage(of client: StreamClientID) -> StreamClientStage? { clients[client]?.stage }

    /// Connections that have not said hello yet (awaiting it, or turned away).
    package var pendingCount: Int { pending.count }

    /// Marks a connection awaiting its hello authenticated (its hello deadline is cancelled) when a client slot is free;
    /// false when every slot is taken (nothing changes: the owner refuses it, or makes room and ``admit(_:)``s it).
    @discardableResult
    package func authenticate(_ client: StreamClientID) -> Bool {
        guard let entry = clients[client], entry.stage == .awaitingHello else { return false }
        guard authenticatedClients.count < limits.maxClients else { return false }
        promote(client)
        return true
    }

    /// Lets a connection that has not said hello in as authenticated whatever the cap (the owner closed another to make
    /// room for it).
    package func admit(_ client: StreamClientID) {
        guard let entry = clients[client], entry.stage != .authenticated else { return }
        promote(client)
    }

    private func promote(_ client: StreamClientID) {
        guard var entry = clients[client] else { return }
        if let timer = entry.helloTimer { loop.cancel(timer) }
        entry.helloTimer = nil
        entry.stage = .authenticated
        clients[client] = entry
        pending.remove(client)
    }

    /// Queues bytes for a live connection; false when it is gone or closing (or overflowed now).
    @discardableResult
    package func send(_ bytes: Data, to client: StreamClientID) -> Bool {
        guard let entry = clients[client] else { return false }
        return entry.channel.send(bytes) == nil
    }

    /// Closes a connection: flushing by default (what is queued, then `lastWords`, reaches the peer first).
    package func close(_ client: StreamClientID, reason: String, flushing: Bool = true, lastWords: Data? = nil) {
        clients[client]?.channel.close(.closed(reason), flushing: flushing, lastWords: lastWords)
    }

    /// Stops listening and closes every connection at once, lingering ones included, each offered `lastWords` in
    /// one non-blocking write. The delegate hears nothing more. Idempotent.
    package func stop(reason: String, lastWords: (StreamClientID) -> Data? = { _ in nil }) {
        guard !stopped else { return }
        stopped = true
        listener?.close()
        listener = nil
        let open = clients
        let draining = lingering
        clients = [:]
        lingering = [:]
        pending.removeAll()
        let held = setAside
        setAside = []
        for entry in held {
            if let timer = entry.timer { loop.cancel(timer) }
            entry.channel.delegate = nil
            entry.channel.close(.closed(reason))
        }
        for (id, entry) in open.sorted(by: { $0.key < $1.key }) {
            if let timer = entry.helloTimer { loop.cancel(timer) }
            entry.channel.delegate = nil
            entry.channel.close(.closed(reason), lastWords: lastWords(id))
        }
        for (_, channel) in draining {
            channel.delegate = nil
            channel.close(.closed(reason))
        }
    }

    // MARK: - StreamListenerDelegate

    package func streamListener(_ listener: StreamListener, accepted fd: Int32, from peer: SocketAddress?) {
        guard !stopped else {
            Glibc.close(fd)
            return
        }
        if let size = limits.socketSendBufferSize { Socket.setSendBuffer(fd, bytes: size) }
        if peer != nil { Socket.setNoDelay(fd) }
        let channel: Channel
        do {
            let session = try tls.map { context throws(IOError) in
                do throws(TLSError) {
                    return try TLSSession(context: context, isServer: true, expectedName: nil, sniName: nil)
                } catch {
                    throw IOError("a TLS session for an accepted connection", code: ENOMEM)
                }
            }
            channel = try Channel(
                loop: loop, fd: fd, connecting: false, codec: makeCodec(), tls: session, options: limits.channel,
                delegate: self)
        } catch {
            Glibc.close(fd)
            return
        }
        let id = nextID
        nextID += 1
        channel.userInfo = id
        let source = StreamSource(peer)
        if limits.helloTimeout != nil { makeRoom(forNewcomerFrom: source) }
        let underCap = clients.values.count { $0.stage == .authenticated } < limits.maxClients
        var entry = Client(
            channel: channel, stage: !underCap ? .turnedAway : (limits.helloTimeout == nil ? .authenticated : .awaitingHello))
        if limits.helloTimeout != nil || !underCap {
            entry.helloTimer = loop.schedule(after: limits.helloTimeout ?? .seconds(5)) { [weak self] in
                self?.helloDeadlinePassed(id)
            }
        }
        clients[id] = entry
        if entry.stage != .authenticated { pending.add(id, from: source) }
        if underCap {
            delegate?.server(self, accepted: id, from: peer)
        } else {
            delegate?.server(self, turnedAway: id)
        }
        // What the peer sent right after connecting (a hello, an upgrade request) is read now, before the next
        // accepts can displace it: a client that speaks at once is heard (or authenticated) first.
        if clients[id] != nil { channel.readNow() }
    }

    /// Sets aside the pending connection a newcomer from `source` displaces, if the pending budget is full. One that seems
    /// silent is read first: its bytes may have arrived after it was accepted, while the listener was still accepting
    /// (a client that spoke is heard, or authenticated, and another is chosen).
    private func makeRoom(forNewcomerFrom source: StreamSource) {
        // Each turn either closes one, or hears or removes one: at most one more turn than there are pending ones.
        for _ in 0...pending.count {
            guard let candidate = pending.displacedForNewcomer(from: source) else { return }
            if !pending.isHeard(candidate), let channel = clients[candidate]?.channel {
                channel.readNow()
                if !pending.contains(candidate) || pending.isHeard(candidate) { continue }
            }
            displacedCount += 1
            pending.remove(candidate)
            setAside(candidate)
            return
        }
    }

    /// Takes a displaced connection out of service: the owner hears it closed; the connection itself is no longer
    /// read and is closed, without a word, at its hello deadline (at once beyond ``maxSetAside``).
    private func setAside(_ id: StreamClientID) {
        guard let entry = clients.removeValue(forKey: id) else { return }
        if let timer = entry.helloTimer { loop.cancel(timer) }
        entry.channel.pauseReading()
        let deadline = limits.helloTimeout ?? .seconds(5)
        let elapsed = Duration.nanoseconds(Int64(clamping: monotonicNanoseconds() &- entry.acceptedAt))
        let timer = loop.schedule(after: max(.zero, deadline - elapsed)) { [weak self] in self?.closeSetAside(id) }
        setAside.append((id, entry.channel, timer))
        if setAside.count > maxSetAside, let oldest = setAside.first { closeSetAside(oldest.id) }
        delegate?.server(self, closed: id, stage: entry.stage, reason: .closed(Self.displacedReason))
    }

    private func closeSetAside(_ id: StreamClientID) {
        guard let index = setAside.firstIndex(where: { $0.id == id }) else { return }
        let entry = setAside.remove(at: index)
        if let timer = entry.timer { loop.cancel(timer) }
        entry.channel.close(.closed(Self.displacedReason))
    }

    private func helloDeadlinePassed(_ id: StreamClientID) {
        guard var entry = clients[id], entry.stage != .authenticated else { return }
        entry.helloTimer = nil
        clients[id] = entry
        delegate?.server(self, helloTimedOut: id)
    }

    // MARK: - StreamChannelDelegate

    package func streamChannel(_ channel: Channel, received frame: Codec.Frame) {
        guard clients[channel.userInfo] != nil else { return }  // set aside: nobody listens any more
        pending.heard(channel.userInfo)
        delegate?.server(self, received: frame, from: channel.userInfo)
    }

    package func streamChannel(_ channel: Channel, failedToDecode failure: Codec.Failure) {
        guard clients[channel.userInfo] != nil else { return channel.close(.closed(Self.displacedReason)) }
        delegate?.server(self, failedToDecode: failure, from: channel.userInfo)
    }

    package func streamChannel(_ channel: Channel, closedBecause reason: StreamCloseReason, unsent: [Never]) {
        let id = channel.userInfo
        if let index = setAside.firstIndex(where: { $0.id == id }) {
            // A set-aside connection its peer closed (or that its own timers ended).
            if let timer = setAside.remove(at: index).timer { loop.cancel(timer) }
            if !channel.isFinished { lingering[id] = channel }
            return
        }
        guard let entry = clients.removeValue(forKey: id) else { return }
        pending.remove(id)
        if let timer = entry.helloTimer { loop.cancel(timer) }
        if !channel.isFinished { lingering[id] = channel }
        delegate?.server(self, closed: id, stage: entry.stage, reason: reason)
    }

    package func streamChannelFinished(_ channel: Channel) {
        lingering[channel.userInfo] = nil
    }
}
