import Foundation
import Glibc

/// One connection of a ``StreamServer``, numbered from 1 in the order of acceptance.
package typealias StreamClientID = UInt64

/// Where a server's connection is in its life.
package enum StreamClientStage: Sendable, Hashable {
    /// Connected; it must authenticate (the owner's hello) before the hello deadline.
    case awaitingHello
    /// The owner accepted it (``StreamServer/authenticate(_:)``).
    case authenticated
    /// Over the client cap: kept only until the owner has told it why (by the hello deadline at the latest).
    case turnedAway
}

/// What the owner of a ``StreamServer`` hears, on the loop thread. It may send, close and authenticate from inside
/// every callback.
package protocol StreamServerDelegate: AnyObject {
    /// How each connection's byte stream is cut into frames.
    associatedtype Codec: StreamCodec

    /// A connection came in under the cap (stage `awaitingHello`, or `authenticated` when the server has no hello
    /// deadline).
    func server(_ server: StreamServer<Self>, accepted client: StreamClientID, from peer: SocketAddress?)
    /// A connection came in over the cap (stage `turnedAway`): tell it why and close it (flushing), or let it in
    /// later with ``StreamServer/admit(_:)`` once another has made room.
    func server(_ server: StreamServer<Self>, turnedAway client: StreamClientID)
    /// A frame from a connection, whatever its stage.
    func server(_ server: StreamServer<Self>, received frame: Codec.Frame, from client: StreamClientID)
    /// A connection's stream cannot be framed any further. It is closed right after unless the owner closes it.
    func server(_ server: StreamServer<Self>, failedToDecode failure: Codec.Failure, from client: StreamClientID)
    /// A connection still awaiting its hello (or turned away) reached the hello deadline.
    func server(_ server: StreamServer<Self>, helloTimedOut client: StreamClientID)
    /// A connection stopped being usable (not called for connections ``StreamServer/stop(reason:lastWords:)`` closes).
    func server(_ server: StreamServer<Self>, closed client: StreamClientID, stage: StreamClientStage, reason: StreamCloseReason)
}

/// A listening socket and the connections it accepted, on an ``EventLoop``: the accept loop, a cap on the number of
/// connections, a hello deadline per connection, and lingering (flushing) closes that ``stop(reason:lastWords:)``
/// cuts short. The control API's Unix socket and WebSocket servers and the push simulator are all one of these.
/// Loop-confined.
package final class StreamServer<Delegate: StreamServerDelegate>: StreamListenerDelegate, StreamChannelDelegate {
    package typealias Codec = Delegate.Codec
    package typealias Tag = Never
    /// The channel of one connection.
    package typealias Channel = StreamChannel<StreamServer<Delegate>>

    /// The server's bounds.
    package struct Limits: Sendable {
        /// Connections served at once (awaiting their hello or authenticated); more are turned away.
        package var maxClients: Int
        /// How long a connection may take to authenticate; nil: no hello (connections are authenticated at once).
        package var helloTimeout: Duration?
        /// Each connection's queue, linger and timeouts.
        package var channel: StreamChannelOptions
        /// The kernel send buffer of accepted sockets; nil keeps the system's.
        package var socketSendBufferSize: Int?

        /// Limits from their parts.
        package init(maxClients: Int, helloTimeout: Duration?, channel: StreamChannelOptions, socketSendBufferSize: Int? = nil) {
            self.maxClients = maxClients
            self.helloTimeout = helloTimeout
            self.channel = channel
            self.socketSendBufferSize = socketSendBufferSize
        }
    }

    private struct Client {
        let channel: Channel
        var stage: StreamClientStage
        var helloTimer: LoopTimer?
    }

    /// The loop the server runs on.
    package let loop: EventLoop
    private let limits: Limits
    private let makeCodec: () -> Codec
    private weak var delegate: Delegate?
    private var listener: StreamListener?
    private var clients: [StreamClientID: Client] = [:]
    /// Connections closed but still flushing their last bytes.
    private var lingering: [StreamClientID: Channel] = [:]
    private var nextID: StreamClientID = 1
    private var stopped = false

    /// Serves the listening socket `fd` on `loop` (on its thread).
    package init(
        loop: EventLoop, listening fd: Int32, limits: Limits, makeCodec: @escaping () -> Codec, delegate: Delegate
    ) throws(IOError) {
        self.loop = loop
        self.limits = limits
        self.makeCodec = makeCodec
        self.delegate = delegate
        listener = try StreamListener(loop: loop, fd: fd, delegate: self)
    }

    /// Connections that authenticated, in no particular order.
    package var authenticatedClients: [StreamClientID] {
        clients.compactMap { $0.value.stage == .authenticated ? $0.key : nil }
    }

    /// The stage of a live connection; nil once it closed.
    package func stage(of client: StreamClientID) -> StreamClientStage? { clients[client]?.stage }

    /// Marks a connection authenticated (its hello deadline is cancelled).
    package func authenticate(_ client: StreamClientID) {
        guard var entry = clients[client], entry.stage == .awaitingHello else { return }
        if let timer = entry.helloTimer { loop.cancel(timer) }
        entry.helloTimer = nil
        entry.stage = .authenticated
        clients[client] = entry
    }

    /// Lets a turned-away connection in as authenticated (the owner closed another to make room for it).
    package func admit(_ client: StreamClientID) {
        guard var entry = clients[client], entry.stage == .turnedAway else { return }
        if let timer = entry.helloTimer { loop.cancel(timer) }
        entry.helloTimer = nil
        entry.stage = .authenticated
        clients[client] = entry
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
            channel = try Channel(
                loop: loop, fd: fd, connecting: false, codec: makeCodec(), options: limits.channel, delegate: self)
        } catch {
            Glibc.close(fd)
            return
        }
        let id = nextID
        nextID += 1
        channel.userInfo = id
        let underCap = clients.values.count { $0.stage != .turnedAway } < limits.maxClients
        var entry = Client(
            channel: channel, stage: !underCap ? .turnedAway : (limits.helloTimeout == nil ? .authenticated : .awaitingHello))
        if limits.helloTimeout != nil || !underCap {
            entry.helloTimer = loop.schedule(after: limits.helloTimeout ?? .seconds(5)) { [weak self] in
                self?.helloDeadlinePassed(id)
            }
        }
        clients[id] = entry
        if underCap {
            delegate?.server(self, accepted: id, from: peer)
        } else {
            delegate?.server(self, turnedAway: id)
        }
    }

    private func helloDeadlinePassed(_ id: StreamClientID) {
        guard var entry = clients[id], entry.stage != .authenticated else { return }
        entry.helloTimer = nil
        clients[id] = entry
        delegate?.server(self, helloTimedOut: id)
    }

    // MARK: - StreamChannelDelegate

    package func streamChannel(_ channel: Channel, received frame: Codec.Frame) {
        delegate?.server(self, received: frame, from: channel.userInfo)
    }

    package func streamChannel(_ channel: Channel, failedToDecode failure: Codec.Failure) {
        delegate?.server(self, failedToDecode: failure, from: channel.userInfo)
    }

    package func streamChannel(_ channel: Channel, closedBecause reason: StreamCloseReason, unsent: [Never]) {
        let id = channel.userInfo
        guard let entry = clients.removeValue(forKey: id) else { return }
        if let timer = entry.helloTimer { loop.cancel(timer) }
        if !channel.isFinished { lingering[id] = channel }
        delegate?.server(self, closed: id, stage: entry.stage, reason: reason)
    }

    package func streamChannelFinished(_ channel: Channel) {
        lingering[channel.userInfo] = nil
    }
}
