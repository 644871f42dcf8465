import Dispatch
import Foundation
import Glibc
import Testing

@testable import SIPTransport
@testable import ParleyIO
import ParleyTestSupport

@Suite("UDP")
struct UDPTests {
    /// Blocks the loop thread in a piece of work until the returned semaphore is signalled, so datagrams queue up.
    private func hold(_ loop: EventLoop) -> DispatchSemaphore {
        let held = DispatchSemaphore(value: 0), release = DispatchSemaphore(value: 0)
        loop.execute {
            held.signal()
            release.wait()
        }
        #expect(held.wait(timeout: .now() + 5) == .success)
        return release
    }

    @Test("two transports exchange a request and its response", arguments: ["127.0.0.1", "::1"])
    func roundTrip(host: String) throws {
        let loop = try makeLoop()
        defer { loop.shutdown() }
        let (alice, aliceInbox) = makeTransport(loop)
        let (bob, bobInbox) = makeTransport(loop)
        let aliceAddress = try alice.listenSync(ListenAddress(kind: .udp, host: host, port: 0))
        let bobAddress = try bob.listenSync(ListenAddress(kind: .udp, host: host, port: 0))
        #expect(aliceAddress.port != 0)

        let request = sipMessage("udp-request", transport: "UDP")
        bob.sendSoon(request, to: SIPDestination(kind: .udp, address: SIPPeerAddress(host: host, port: aliceAddress.port)))
        let received = try #require(aliceInbox.first())
        #expect(received.bytes == request)
        #expect(received.kind == .udp)
        #expect(received.connection == nil)
        #expect(received.local == aliceAddress)
        #expect(received.source == SIPPeerAddress(host: host, port: bobAddress.port))

        let response = Data("SIP/2.0 200 OK\r\nContent-Length: 0\r\n\r\n".utf8)
        alice.sendSoon(response, to: received.replyDestination)
        let reply = try #require(bobInbox.first())
        #expect(reply.bytes == response)
        #expect(reply.source == SIPPeerAddress(host: host, port: aliceAddress.port))

        let stats = try #require(loop.executeAndWait { alice.statistics })
        #expect(stats.datagramsReceived == 1)
        #expect(stats.messagesDelivered == 1)
        #expect(stats.bytesReceived == request.count)
        #expect(stats.bytesSent == response.count)
    }

    @Test("empty and oversized datagrams are dropped and counted; the next one still arrives")
    func oversize() throws {
        let loop = try makeLoop()
        defer { loop.shutdown() }
        let (transport, inbox) = makeTransport(loop, limits: TransportLimits(maxMessageBytes: 1000))
        let address = try transport.listenSync(ListenAddress(parsing: "udp://127.0.0.1:0"))
        let peer = try RawSocket(datagramFamily: AF_INET)
        peer.sendDatagram(Data(repeating: 0x41, count: 1001), to: address)
        peer.sendDatagram(Data(repeating: 0x41, count: 60_000), to: address)
        peer.sendDatagram(Data(), to: address)
        let fits = sipMessage("fits", body: String(repeating: "b", count: 1000 - sipMessage("fits", body: "").count - 2))
        #expect(fits.count == 1000)
        peer.sendDatagram(fits, to: address)
        #expect(inbox.first()?.bytes == fits)
        let stats = transport.statisticsSync()
        #expect(stats.datagramsReceived == 4)
        #expect(stats.datagramsDropped == 3)
        #expect(stats.oversizeMessages == 2)
        #expect(stats.messagesDelivered == 1)
        #expect(inbox.all.count == 1)
    }

    @Test("NAT keep-alive datagrams (CRLF, CRLFCRLF) are counted and dropped unparsed; the next message arrives")
    func keepAlives() throws {
        let loop = try makeLoop()
        defer { loop.shutdown() }
        let (transport, inbox) = makeTransport(loop)
        let address = try transport.listenSync(ListenAddress(parsing: "udp://127.0.0.1:0"))
        let peer = try RawSocket(datagramFamily: AF_INET)
        peer.sendDatagram(Data("\r\n\r\n".utf8), to: address)
        peer.sendDatagram(Data("\r\n".utf8), to: address)
        peer.sendDatagram(sipMessage("after"), to: address)
        #expect(inbox.first()?.bytes == sipMessage("after"))
        let stats = transport.statisticsSync()
        #expect(stats.datagramKeepAlives == 2)
        #expect(stats.messagesDelivered == 1)
        #expect(stats.datagramsDropped == 0)
    }

    @Test("with no UDP listener of the family, an ephemeral socket sends (and hears the answer)")
    func ephemeral() throws {
        let loop = try makeLoop()
        defer { loop.shutdown() }
        let (server, serverInbox) = makeTransport(loop)
        let (client, clientInbox) = makeTransport(loop)
        let address = try server.listenSync(ListenAddress(parsing: "udp://[::1]:0"))
        _ = try client.listenSync(ListenAddress(parsing: "udp://127.0.0.1:0"))  // IPv4 only: no use for ::1
        client.sendSoon(sipMessage("ephemeral"), to: SIPDestination(kind: .udp, address: SIPPeerAddress(host: "::1", port: address.port)))
        let request = try #require(serverInbox.first())
        #expect(request.source.host == "::1")
        server.sendSoon(Data("SIP/2.0 200 OK\r\nContent-Length: 0\r\n\r\n".utf8), to: request.replyDestination)
        let reply = try #require(clientInbox.first())
        #expect(reply.local.host == "::")
        #expect(reply.local.port == request.source.port)
    }

    @Test("a destination that is not a numeric IP is a send failure, not a crash")
    func badDestination() throws {
        let loop = try makeLoop()
        defer { loop.shutdown() }
        let (transport, _) = makeTransport(loop)
        let events = TransportEvents(transport)
        let destination = SIPDestination(kind: .udp, address: SIPPeerAddress(host: "example.com", port: 5060))
        transport.sendSoon(sipMessage("x"), to: destination)
        let failure = try #require(events.failures.first())
        #expect(failure.error == .invalidDestination(destination.address))
        #expect(failure.destination == destination)
        #expect(transport.statisticsSync().sendFailures == 1)
    }

    @Test("a queue of datagrams read in batches (recvmmsg) arrives whole and in order, each with its own sender")
    func batchedReads() throws {
        let loop = try makeLoop()
        defer { loop.shutdown() }
        let (transport, inbox) = makeTransport(loop, limits: TransportLimits(maxMessageBytes: 1000))
        let address = try transport.listenSync(ListenAddress(parsing: "udp://127.0.0.1:0"))
        // Hold the loop so the datagrams queue up: more than one batch and more than one turn's 256.
        let release = hold(loop)
        let peers = [try RawSocket(datagramFamily: AF_INET), try RawSocket(datagramFamily: AF_INET)]
        var sent: [(bytes: Data, peer: Int)] = []
        for index in 0..<300 {
            if index == 20 { peers[0].sendDatagram(Data(repeating: 0x41, count: 1001), to: address) }  // too large
            let message = sipMessage("batch-\(index)")
            peers[index % 2].sendDatagram(message, to: address)
            sent.append((message, index % 2))
        }
        release.signal()
        #expect(inbox.wait(until: { $0.count == 300 }))
        let received = inbox.all
        #expect(received.map(\.bytes) == sent.map(\.bytes))
        let ports = peers.map { UInt16($0.localPort) }
        let expectedPorts: [UInt16] = sent.map { ports[$0.peer] }
        #expect(received.map(\.source.port) == expectedPorts)
        #expect(Set(ports).count == 2)
        let stats = transport.statisticsSync()
        #expect(stats.datagramsReceived == 301)
        #expect(stats.oversizeMessages == 1)
        #expect(stats.messagesDelivered == 300)
    }

    @Test("with a message limit above the largest UDP payload, a datagram of 65,000 bytes still arrives whole")
    func largestDatagram() throws {
        let loop = try makeLoop()
        defer { loop.shutdown() }
        let (transport, inbox) = makeTransport(loop, limits: TransportLimits(maxMessageBytes: 1_000_000))
        let address = try transport.listenSync(ListenAddress(parsing: "udp://127.0.0.1:0"))
        let peer = try RawSocket(datagramFamily: AF_INET)
        let bodySize = 65_000 - sipMessage("large", body: "").count - 4  // Content-Length grows by four digits
        let large = sipMessage("large", body: String(repeating: "b", count: bodySize))
        #expect(large.count == 65_000)
        peer.sendDatagram(large, to: address)
        #expect(inbox.first()?.bytes == large)
        #expect(transport.statisticsSync().datagramsDropped == 0)
    }

    @Test("datagrams the kernel drops for a full receive buffer are counted (SO_RXQ_OVFL)")
    func receiveBufferDrops() throws {
        let loop = try makeLoop()
        defer { loop.shutdown() }
        let (transport, inbox) = makeTransport(loop, limits: TransportLimits(udpReceiveBuffer: 4096))
        let address = try transport.listenSync(ListenAddress(parsing: "udp://127.0.0.1:0"))
        // Hold the loop so nothing is read while the buffer overflows.
        let release = hold(loop)
        let peer = try RawSocket(datagramFamily: AF_INET)
        for index in 0..<200 { peer.sendDatagram(sipMessage("flood-\(index)"), to: address) }
        release.signal()
        // What fit in the buffer arrives; then one more datagram carries the kernel's final drop count.
        #expect(inbox.wait(until: { !$0.isEmpty }))
        _ = loop.executeAndWait {}
        let last = sipMessage("last")
        peer.sendDatagram(last, to: address)
        #expect(inbox.wait(until: { $0.contains { $0.bytes == last } }))
        let stats = transport.statisticsSync()
        #expect(stats.receiveBufferDrops > 0)
        #expect(stats.receiveBufferDrops + stats.datagramsReceived == 201, "\(stats)")
    }

    @Test("a datagram carries how long it waited in the receive queue (its kernel arrival time, SO_TIMESTAMPNS)")
    func queueWait() throws {
        let loop = try makeLoop()
        defer { loop.shutdown() }
        let (transport, inbox) = makeTransport(loop)
        let address = try transport.listenSync(ListenAddress(parsing: "udp://127.0.0.1:0"))
        let peer = try RawSocket(datagramFamily: AF_INET)
        peer.sendDatagram(sipMessage("prompt"), to: address)
        let prompt = try #require(inbox.first()?.waited, "a UDP datagram carries its wait")
        #expect(prompt >= .zero && prompt < .seconds(1))
        // Held loop: the datagram sits in the queue for at least the hold (the one place this test waits for time
        // to pass: the kernel's clock is what is measured).
        let release = hold(loop)
        let sent = ContinuousClock.now
        peer.sendDatagram(sipMessage("queued"), to: address)
        usleep(40_000)
        let heldFor = ContinuousClock.now - sent
        release.signal()
        let queued = try #require(inbox.wait(for: 2)?.last?.waited)
        #expect(queued >= heldFor - .milliseconds(2) && queued < .seconds(5), "waited \(queued), held \(heldFor)")
    }

    @Test("a datagram to a port nobody listens on is an unreachable failure at once (ICMP), naming the destination",
          arguments: [("127.0.0.1", false), ("::1", false), ("127.0.0.1", true)])
    func portUnreachable(host: String, sendsOnThread: Bool) throws {
        let loop = try makeLoop()
        defer { loop.shutdown() }
        let (transport, _) = makeTransport(loop, sendsOnThread: sendsOnThread)
        let events = TransportEvents(transport)
        _ = try transport.listenSync(ListenAddress(kind: .udp, host: host, port: 0))
        let port = try unusedUDPPort(host: host)
        let destination = SIPDestination(kind: .udp, address: SIPPeerAddress(host: host, port: port))
        let started = ContinuousClock.now
        transport.sendSoon(sipMessage("nobody", transport: "UDP"), to: destination)
        let failure = try #require(events.failures.first(within: .seconds(2)), "no failure reported")
        #expect(ContinuousClock.now - started < .seconds(1))
        #expect(failure.destination.address == destination.address && failure.destination.kind == .udp)
        guard case .unreachable(let address, let code) = failure.error else {
            Issue.record("not an unreachable failure: \(failure.error)")
            return
        }
        #expect(address == destination.address && code == ECONNREFUSED)
        #expect("\(failure.error)" == "nobody is listening at udp \(destination.address) (ICMP port unreachable)")
    }
}
