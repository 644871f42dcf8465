import Dispatch
import Foundation
import Glibc
import Testing

@testable import ParleyIO
@testable import SIPTransport
import ParleyTestSupport

/// UDP with `sendsDatagramsOnThread`: a loop turn's datagrams leave from the sender thread, in batches.
@Suite("UDP sent from a thread of its own")
struct DatagramSenderTests {
    /// A sending transport on the sender thread and a receiving one on the same loop, both listening on loopback.
    private struct Pair {
        let loop: EventLoop
        let sender: SIPTransport
        let receiver: SIPTransport
        let inbox: EventRecorder<InboundSIPMessage>
        let destination: SIPDestination

        init(limits: TransportLimits = .init()) throws {
            loop = try makeLoop()
            (sender, _) = makeTransport(loop, limits: limits, sendsOnThread: true)
            (receiver, inbox) = makeTransport(loop)
            _ = try sender.listenSync(ListenAddress(parsing: "udp://127.0.0.1:0"))
            let address = try receiver.listenSync(ListenAddress(parsing: "udp://127.0.0.1:0"))
            destination = SIPDestination(kind: .udp, address: SIPPeerAddress(host: "127.0.0.1", port: address.port))
        }

        /// Sends the messages in one loop turn, then runs `after` in that turn too.
        func send(_ messages: [Data], after: @escaping @Sendable (SIPTransport) -> Void = { _ in }) {
            let sender = self.sender, destination = self.destination
            loop.execute {
                for message in messages { sender.send(message, to: destination) }
                after(sender)
            }
        }
    }

    private static func messages(_ count: Int, _ prefix: String) -> [Data] {
        (0..<count).map { sipMessage("\(prefix)-\($0)", transport: "UDP") }
    }

    @Test("datagrams sent in one turn (several sendmmsg chunks) arrive in order, and their bytes are counted")
    func order() throws {
        let pair = try Pair()
        defer { pair.loop.shutdown() }
        let messages = Self.messages(3 * DatagramSender.chunk + 5, "order")
        pair.send(messages)
        #expect(pair.inbox.wait(until: { $0.count == messages.count }))
        #expect(pair.inbox.all.map(\.bytes) == messages)
        pair.sender.closeSync()  // waits for the sender thread to have written everything
        #expect(pair.sender.statisticsSync().bytesSent == messages.reduce(0) { $0 + $1.count })
    }

    @Test("a datagram the kernel refuses is a send failure a turn later; the ones around it still go", arguments: [
        70_000,  // over UDP's 65,507 bytes: sendmmsg refuses it in the middle of a chunk
        300_000,  // over the batch buffer: sent alone, refused by sendto
    ])
    func refused(size: Int) throws {
        let pair = try Pair()
        defer { pair.loop.shutdown() }
        let events = TransportEvents(pair.sender)
        let before = sipMessage("before", transport: "UDP"), after = sipMessage("after", transport: "UDP")
        pair.send([before, Data(repeating: 0x41, count: size), after])
        let failure = try #require(events.failures.first())
        #expect(failure.destination == pair.destination)
        #expect(failure.error == .system(operation: "sendto \(pair.destination.address)", code: EMSGSIZE))
        #expect(pair.inbox.wait(until: { $0.count == 2 }))
        #expect(pair.inbox.all.map(\.bytes) == [before, after])
        #expect(pair.sender.statisticsSync().sendFailures == 1)
        #expect(events.failures.all.count == 1)
    }

    @Test("beyond maxQueuedDatagrams a datagram is a sendQueueFull failure; the ones taken arrive in order")
    func queueLimit() throws {
        let pair = try Pair(limits: TransportLimits(maxQueuedDatagrams: 10))
        defer { pair.loop.shutdown() }
        let events = TransportEvents(pair.sender)
        let messages = Self.messages(100, "limit")
        pair.send(messages)
        // The first chunk of 64 finds room for 10 at most; what the sender drained meanwhile makes room for more.
        #expect(events.failures.wait(until: { !$0.isEmpty }))
        let statistics = pair.sender.statisticsSync()
        #expect(statistics.sendFailures >= 54)
        #expect(pair.inbox.wait(until: { $0.count + statistics.sendFailures == messages.count }))
        let received = pair.inbox.all.map(\.bytes)
        #expect(received.count >= 10)
        #expect(received == messages.filter(received.contains))  // in the order sent
        #expect(events.failures.all.allSatisfy { $0.error == .sendQueueFull($0.destination.address) })
    }

    @Test("a message handed over as a function is written on the sender thread over UDP, at once over TCP")
    func deferredWriting() throws {
        let pair = try Pair()
        defer { pair.loop.shutdown() }
        let onLoop = EventRecorder<Bool>()
        let message = sipMessage("deferred", transport: "UDP")
        let loop = pair.loop, sender = pair.sender, destination = pair.destination
        loop.execute {
            sender.send(to: destination) {
                onLoop.record(loop.inEventLoop)
                return message
            }
        }
        #expect(pair.inbox.first()?.bytes == message)
        #expect(onLoop.all == [false])

        let (tcpServer, tcpInbox) = makeTransport(loop)
        let address = try tcpServer.listenSync(ListenAddress(kind: .tcp, host: "127.0.0.1", port: 0))
        let overTCP = sipMessage("deferred-tcp")
        loop.execute {
            sender.send(to: SIPDestination(kind: .tcp, address: SIPPeerAddress(host: "127.0.0.1", port: address.port))) {
                onLoop.record(loop.inEventLoop)
                return overTCP
            }
        }
        #expect(tcpInbox.first()?.bytes == overTCP)
        #expect(onLoop.all == [false, true])
    }

    @Test("closing the transport in the turn that queued datagrams sends them first")
    func closeFlushes() throws {
        let pair = try Pair()
        defer { pair.loop.shutdown() }
        let messages = Self.messages(100, "close")
        pair.send(messages) { $0.close() }
        #expect(pair.inbox.wait(until: { $0.count == messages.count }))
        #expect(pair.inbox.all.map(\.bytes) == messages)
        let statistics = pair.sender.statisticsSync()
        #expect(statistics.bytesSent == messages.reduce(0) { $0 + $1.count })
        #expect(statistics.sendFailures == 0)
    }

    @Test("datagrams queued in the loop's last turn are sent at its shutdown (which drops the hand-over timer)")
    func shutdownFlushes() throws {
        let pair = try Pair()
        // A listener on a loop of its own: the pair's loop, its receiver included, is about to stop.
        let other = try makeLoop()
        defer { other.shutdown() }
        let (listener, inbox) = makeTransport(other)
        let address = try listener.listenSync(ListenAddress(parsing: "udp://127.0.0.1:0"))
        let destination = SIPDestination(kind: .udp, address: SIPPeerAddress(host: "127.0.0.1", port: address.port))
        let messages = Self.messages(50, "shutdown")
        // Hold the loop, queue the sends behind the hold and stop the loop: the sends run in its very last turn.
        let held = DispatchSemaphore(value: 0), release = DispatchSemaphore(value: 0)
        pair.loop.execute {
            held.signal()
            release.wait()
        }
        held.wait()
        let sender = pair.sender
        pair.loop.execute {
            for message in messages { sender.send(message, to: destination) }
        }
        pair.loop.shutdownWithoutWaiting()
        release.signal()
        #expect(inbox.wait(until: { $0.count == messages.count }))
        #expect(inbox.all.map(\.bytes) == messages)
    }

    @Test("sending after close is a transportClosed failure, and the transport stays quiet")
    func afterClose() throws {
        let pair = try Pair()
        defer { pair.loop.shutdown() }
        let events = TransportEvents(pair.sender)
        pair.sender.closeSync()
        pair.send([sipMessage("late", transport: "UDP")])
        let failure = try #require(events.failures.first())
        #expect(failure.error == .transportClosed)
        #expect(pair.inbox.all.isEmpty)
    }
}
