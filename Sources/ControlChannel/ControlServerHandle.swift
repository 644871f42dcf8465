import Foundation
import Glibc
import ParleyIO
import Synchronization

/// How many clients of a server subscribed, and how many of them asked for audio levels, readable from any thread
/// (the core, on its loop, keeps them).
final class SubscriberCount: Sendable {
    private let count = Atomic<Int>(0)
    private let levelCount = Atomic<Int>(0)
    var value: Int { count.load(ordering: .relaxed) }
    var levels: Int { levelCount.load(ordering: .relaxed) }
    func set(_ value: Int) { count.store(value, ordering: .relaxed) }
    func setLevels(_ value: Int) { levelCount.store(value, ordering: .relaxed) }
}

/// A running control endpoint as the thread-safe public servers hold it: the loop it runs on (its own, or one it was
/// given), and the loop-confined core. Every call hops onto the loop (or runs at once when already there).
final class ControlServerHandle<Framing: ControlFraming>: Sendable {
    let loop: EventLoop
    /// The loop was made for this server: stopping the server shuts it down.
    private let ownsLoop: Bool
    private let core: LoopBound<ControlServerCore<Framing>>
    /// The subscribed clients, for whoever decides whether an event is worth making.
    let subscribers = SubscriberCount()

    /// Serves the listening socket `fd` with `framing` (over TLS with `tls`); on `loop`, or on a loop of its own when
    /// nil.
    init(
        listening fd: Int32, framing: Framing, tls: TLSContext? = nil, token: String, limits: ControlLimits, loop: EventLoop?,
        onLine: @escaping @Sendable (ControlClientID, Data) -> Void, onClose: (@Sendable (ControlClientID) -> Void)?
    ) throws(IOError) {
        ownsLoop = loop == nil
        let running: EventLoop
        if let loop { running = loop } else { running = try EventLoop(name: "parley-control") }
        let loop = running
        self.loop = loop
        let bound = LoopBound(
            ControlServerCore(
                loop: loop, framing: framing, token: Array(token.utf8), limits: limits, onLine: onLine, onClose: onClose,
                subscriberCount: subscribers),
            identity: loop.identity)
        core = bound
        let started = loop.executeAndWait { () -> IOError? in
            do throws(IOError) {
                try bound.value.start(listening: fd, tls: tls)
                return nil
            } catch {
                return error
            }
        }
        guard let started else {
            Glibc.close(fd)
            throw IOError("the event loop is shut down", code: ECANCELED)
        }
        if let started {
            Glibc.close(fd)
            if ownsLoop { loop.shutdown() }
            throw started
        }
    }

    deinit {
        let core = core
        loop.execute { core.value.stop() }
        if ownsLoop { loop.shutdownWithoutWaiting() }
    }

    func send(_ message: Data, to client: ControlClientID) {
        perform { $0.send(message, to: client) }
    }

    func broadcast(_ message: Data) {
        perform { $0.broadcast(message) }
    }

    func subscribe(_ client: ControlClientID, audioLevels: Bool) {
        perform { $0.subscribe(client, audioLevels: audioLevels) }
    }

    func sendToSubscribers(_ message: Data, audioLevelsOnly: Bool) {
        perform { $0.sendToSubscribers(message, audioLevelsOnly: audioLevelsOnly) }
    }

    func close(_ client: ControlClientID) {
        perform { $0.close(client) }
    }

    var clientCount: Int {
        let core = core
        return loop.executeAndWait { core.value.authenticatedCount } ?? 0
    }

    var pendingCount: Int {
        let core = core
        return loop.executeAndWait { core.value.pendingCount } ?? 0
    }

    func stop() {
        loop.preconditionNotInEventLoop()
        let core = core
        _ = loop.executeAndWait { core.value.stop() }
        if ownsLoop { loop.shutdown() }
    }

    /// Runs `body` on the core soon, in submission order — also when called on the loop (a handler calling back),
    /// so that what one thread queues (events) is never overtaken by what the loop itself sends (replies).
    private func perform(_ body: @escaping @Sendable (ControlServerCore<Framing>) -> Void) {
        let core = core
        loop.execute { body(core.value) }
    }
}
