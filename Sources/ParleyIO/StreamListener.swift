import Glibc

/// Who takes the connections a ``StreamListener`` accepts.
package protocol StreamListenerDelegate: AnyObject {
    /// A connection was accepted (non-blocking, close-on-exec); the delegate owns `fd` now. `peer` is nil for Unix
    /// sockets.
    func streamListener(_ listener: StreamListener, accepted fd: Int32, from peer: SocketAddress?)
}

/// A listening stream socket (TCP, or Unix-domain) on an ``EventLoop``: accepts up to 64 connections a turn and
/// hands each to its delegate; when the process runs out of descriptors or memory it stops watching the backlog for
/// 100 ms instead of spinning on it. Loop-confined.
package final class StreamListener: LoopFDHandler {
    /// How long accepting pauses after the process ran out of descriptors or memory.
    package static let exhaustionPause: Duration = .milliseconds(100)

    private let loop: EventLoop
    private let fd: Int32
    private var token: UInt64 = 0
    private weak var delegate: (any StreamListenerDelegate)?
    private var resumeTimer: LoopTimer?
    /// Times accepting paused (for statistics).
    package private(set) var pauses = 0
    /// Whether the listener is closed.
    package private(set) var isClosed = false

    /// Takes a listening socket and starts accepting on `loop` (on its thread).
    package init(loop: EventLoop, fd: Int32, delegate: any StreamListenerDelegate) throws(IOError) {
        self.loop = loop
        self.fd = fd
        self.delegate = delegate
        token = try loop.register(fd, interest: LoopInterest.readable, handler: self)
    }

    package func handle(events: UInt32) {
        for _ in 0..<64 where !isClosed {
            switch Socket.accept(fd) {
            case .none:
                return
            case .exhausted:
                return pauseAccepting()
            case .connection(let client, let peer):
                guard let delegate else {
                    Glibc.close(client)
                    continue
                }
                delegate.streamListener(self, accepted: client, from: peer)
            }
        }
    }

    package func loopWillShutDown() {
        guard !isClosed else { return }
        isClosed = true
        Glibc.close(fd)
    }

    /// Stops accepting and closes the listening socket. Idempotent.
    package func close() {
        guard !isClosed else { return }
        isClosed = true
        if let resumeTimer { loop.cancel(resumeTimer) }
        resumeTimer = nil
        loop.deregister(token)
        Glibc.close(fd)
    }

    private func pauseAccepting() {
        guard resumeTimer == nil else { return }
        pauses += 1
        loop.modify(token, interest: 0)
        resumeTimer = loop.schedule(after: Self.exhaustionPause) { [self] in
            resumeTimer = nil
            guard !isClosed else { return }
            loop.modify(token, interest: LoopInterest.readable)
        }
    }
}
