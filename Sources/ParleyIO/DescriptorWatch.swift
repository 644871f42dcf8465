/// Watches a descriptor that someone else owns (a C library's socket, such as c-ares'): the loop reports readiness,
/// the owner reads, writes and closes. Unlike the loop's other handlers a watch never closes its descriptor; when the
/// loop shuts down it tells the owner once (`onLoopShutdown`) and forgets the descriptor. Loop-confined: made, changed
/// and cancelled on the loop thread.
package final class DescriptorWatch: LoopFDHandler {
    /// What the descriptor is ready for (error and hang-up count as both, so the owner finds out by its own call).
    package struct Readiness: Equatable, Sendable {
        package var readable: Bool
        package var writable: Bool
    }

    private let loop: EventLoop
    /// The descriptor watched.
    package let fd: Int32
    private var token: UInt64 = 0
    private let onReady: (Readiness) -> Void
    private var onLoopShutdown: (() -> Void)?
    /// Whether the watch has ended (cancelled, or the loop shut down): no further call reaches the owner.
    package private(set) var isCancelled = false

    /// Starts watching `fd` on `loop` for reading and/or writing (neither: registered, but silent until `update`).
    package init(
        loop: EventLoop, fd: Int32, readable: Bool, writable: Bool,
        onReady: @escaping (Readiness) -> Void, onLoopShutdown: @escaping () -> Void
    ) throws(IOError) {
        self.loop = loop
        self.fd = fd
        self.onReady = onReady
        self.onLoopShutdown = onLoopShutdown
        token = try loop.register(fd, interest: Self.mask(readable: readable, writable: writable), handler: self)
    }

    /// Changes what the watch waits for.
    package func update(readable: Bool, writable: Bool) {
        guard !isCancelled else { return }
        loop.modify(token, interest: Self.mask(readable: readable, writable: writable))
    }

    /// Stops watching (before the owner closes the descriptor). Idempotent; the owner hears nothing more.
    package func cancel() {
        guard !isCancelled else { return }
        isCancelled = true
        onLoopShutdown = nil
        loop.deregister(token)
    }

    package func handle(events: UInt32) {
        guard !isCancelled else { return }
        let failed = events & (LoopInterest.error | LoopInterest.hangUp) != 0
        onReady(Readiness(
            readable: failed || events & LoopInterest.readable != 0,
            writable: failed || events & LoopInterest.writable != 0))
    }

    package func loopWillShutDown() {
        guard !isCancelled else { return }
        isCancelled = true
        let tell = onLoopShutdown
        onLoopShutdown = nil
        tell?()
    }

    private static func mask(readable: Bool, writable: Bool) -> UInt32 {
        (readable ? LoopInterest.readable : 0) | (writable ? LoopInterest.writable : 0)
    }
}
