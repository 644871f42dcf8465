import Foundation
import Glibc
import Testing

@testable import SIPTransport
@testable import ParleyIO
import ParleyTestSupport

@Suite("TCP")
struct TCPTests {
    let ok = Data("SIP/2.0 200 OK\r\nContent-Length: 0\r\n\r\n".utf8)

    private func listening(
        _ host: String, limits: TransportLimits = .init()
    ) throws -> (EventLoop, SIPTransport, EventRecorder<InboundSIPMessage>, ListenAddress) {
        let loop = try makeLoop()
        let (transport, inbox) = makeTransport(loop, limits: limits)
        let address = try transport.listenSync(ListenAddress(kind: .tcp, host: host, port: 0))
        return (loop, transport, inbox, address)
    }

    @Test("a message written one byte at a time arrives once, whole", arguments: ["127.0.0.1", "::1"])
    func byteByByte(host: String) throws {
        let (loop, transport, inbox, address) = try listening(host)
        defer { loop.shutdown() }
        defer { withExtendedLifetime(transport) {} }
        let client = try RawSocket(connectingTo: address)
        let message = sipMessage("slow", body: "v=0\r\n")
        for byte in message { client.write(Data([byte])) }
        let received = try #require(inbox.first())
        #expect(received.bytes == message)
        #expect(received.kind == .tcp)
        #expect(received.source.host == host)
        #expect(received.connection != nil)
        #expect(received.waited == nil, "a stream carries no per-message queue wait")
        #expect(received.local.port == address.port)
        client.write(sipMessage("next"))
        #expect(inbox.wait(for: 2)?.last?.bytes == sipMessage("next"))
    }

    @Test("two messages in one write both arrive, in order, and a reply goes back on the same connection",
        arguments: ["127.0.0.1", "::1"])
    func twoInOneAndReply(host: String) throws {
        let (loop, transport, inbox, address) = try listening(host)
        defer { loop.shutdown() }
        let client = try RawSocket(connectingTo: address)
        client.write(sipMessage("first") + sipMessage("second", body: "body"))
        let both = try #require(inbox.wait(for: 2))
        #expect(both.map(\.bytes) == [sipMessage("first"), sipMessage("second", body: "body")])
        #expect(both[0].connection == both[1].connection)

        transport.sendSoon(ok, to: both[0].replyDestination)
        #expect(client.read(count: ok.count) == ok)
        let stats = transport.statisticsSync()
        #expect(stats.connectionsAccepted == 1)
        #expect(stats.connectionsInitiated == 0)
        #expect(stats.connectionsOpen == 1)
    }

    @Test("an opened connection carries the messages queued while it connected, in order, and is reused",
        arguments: ["127.0.0.1", "::1"])
    func outgoing(host: String) throws {
        let (loop, server, inbox, address) = try listening(host)
        defer { loop.shutdown() }
        let (client, clientInbox) = makeTransport(loop)
        let destination = SIPDestination(kind: .tcp, address: SIPPeerAddress(host: host, port: address.port))
        let messages = (0..<20).map { sipMessage("queued-\($0)", body: String(repeating: "q", count: $0 * 100)) }
        loop.execute {
            for message in messages { client.send(message, to: destination) }
        }
        let received = try #require(inbox.wait(for: 20))
        #expect(received.map(\.bytes) == messages)
        #expect(Set(received.map(\.connection)).count == 1)

        server.sendSoon(ok, to: received[0].replyDestination)
        let reply = try #require(clientInbox.first())
        #expect(reply.bytes == ok)
        #expect(reply.source == destination.address)
        #expect(reply.local.host == host)
        client.sendSoon(sipMessage("again"), to: destination)
        #expect(inbox.wait(for: 21)?.last?.connection == received[0].connection)
        #expect(client.statisticsSync().connectionsInitiated == 1)
    }

    @Test("a peer that closes: the closed-connection handler hears of it")
    func peerClose() throws {
        let (loop, transport, inbox, address) = try listening("127.0.0.1")
        defer { loop.shutdown() }
        let events = TransportEvents(transport)
        var client: RawSocket? = try RawSocket(connectingTo: address)
        client!.write(sipMessage("bye"))
        let connection = try #require(inbox.first()?.connection)
        client = nil
        #expect(events.closed.first() == connection)
        let stats = transport.statisticsSync()
        #expect(stats.connectionsOpen == 0)
        #expect(stats.connectionsClosed == 1)
        #expect(client == nil)
    }

    @Test("a message without Content-Length closes the connection and counts a framing error")
    func missingContentLength() throws {
        let (loop, transport, inbox, address) = try listening("127.0.0.1")
        defer { loop.shutdown() }
        let client = try RawSocket(connectingTo: address)
        client.write(Data("OPTIONS sip:bob@127.0.0.1 SIP/2.0\r\nCall-ID: x\r\n\r\n".utf8))
        #expect(client.waitForClose())
        let stats = transport.statisticsSync()
        #expect(stats.framingErrors == 1)
        #expect(stats.messagesDelivered == 0)
        #expect(inbox.all.isEmpty)
    }

    @Test("endless garbage is cut off at the message size limit")
    func garbage() throws {
        let (loop, transport, _, address) = try listening("127.0.0.1", limits: TransportLimits(maxMessageBytes: 2000))
        defer { loop.shutdown() }
        let client = try RawSocket(connectingTo: address)
        for _ in 0..<10 { client.write(Data(repeating: 0x47, count: 500)) }
        #expect(client.waitForClose())
        let stats = transport.statisticsSync()
        #expect(stats.framingErrors == 1)
        #expect(stats.oversizeMessages == 1)
    }

    @Test("a keep-alive ping gets a pong; a lone CRLF gets nothing")
    func keepAlive() throws {
        let (loop, transport, inbox, address) = try listening("127.0.0.1")
        defer { loop.shutdown() }
        let client = try RawSocket(connectingTo: address)
        client.write(Data("\r\n\r\n".utf8))
        #expect(client.read(count: 2) == Data("\r\n".utf8))
        client.write(Data("\r\n".utf8) + sipMessage("after-pong"))
        #expect(inbox.first()?.bytes == sipMessage("after-pong"))
        #expect(transport.statisticsSync().keepAlivePongs == 1)
    }

    @Test("on a connection we opened, CRLFs from the server are pongs, never answered (RFC 5626: the client pings)")
    func pongsOnOurConnection() throws {
        let (loop, server, inbox, address) = try listening("127.0.0.1")
        defer { loop.shutdown() }
        let (client, clientInbox) = makeTransport(loop)
        let destination = SIPDestination(kind: .tcp, address: SIPPeerAddress(host: "127.0.0.1", port: address.port))
        client.sendSoon(Data("\r\n\r\n".utf8) + sipMessage("register"), to: destination)
        let request = try #require(inbox.first())
        #expect(request.bytes == sipMessage("register"))
        // Two pongs in one write read as a ping; the client must not answer them (else a pong would go back).
        server.sendSoon(Data("\r\n\r\n".utf8) + ok, to: request.replyDestination)
        #expect(try #require(clientInbox.first()).bytes == ok)
        server.sendSoon(ok, to: request.replyDestination)
        #expect(clientInbox.wait(for: 2)?.count == 2)
        #expect(client.statisticsSync().keepAlivePongs == 0)
        #expect(server.statisticsSync().keepAlivePongs == 1, "the server answered the client's ping")
    }

    @Test("connection refused is a send failure with the errno")
    func refused() throws {
        let loop = try makeLoop()
        defer { loop.shutdown() }
        let (transport, _) = makeTransport(loop)
        let events = TransportEvents(transport)
        let destination = SIPDestination(kind: .tcp, address: SIPPeerAddress(host: "127.0.0.1", port: try unusedTCPPort()))
        transport.sendSoon(sipMessage("a"), to: destination)
        transport.sendSoon(sipMessage("b"), to: destination)
        let failures = try #require(events.failures.wait(for: 2))
        #expect(failures.map(\.error) == Array(repeating: .connectionFailed(destination.address, code: ECONNREFUSED), count: 2))
        #expect(failures[0].error.description.contains("Connection refused"))
        let stats = transport.statisticsSync()
        #expect(stats.sendFailures == 2)
        #expect(stats.connectionsOpen == 0)
    }

    @Test("connections beyond the limit are accepted and closed at once, and counted")
    func connectionLimit() throws {
        let (loop, transport, inbox, address) = try listening("127.0.0.1", limits: TransportLimits(maxConnections: 1))
        defer { loop.shutdown() }
        let first = try RawSocket(connectingTo: address)
        first.write(sipMessage("first"))
        #expect(inbox.first() != nil)
        let second = try RawSocket(connectingTo: address)
        #expect(second.waitForClose())
        #expect(transport.statisticsSync().connectionsRefused == 1)
        first.write(sipMessage("still"))
        #expect(inbox.wait(for: 2) != nil)
    }

    @Test("an idle connection is closed after the idle timeout")
    func idle() throws {
        let (loop, transport, _, address) = try listening(
            "127.0.0.1", limits: TransportLimits(idleConnectionTimeout: .milliseconds(150)))
        defer { loop.shutdown() }
        let events = TransportEvents(transport)
        let start = ContinuousClock.now
        let client = try RawSocket(connectingTo: address)
        #expect(client.waitForClose())
        #expect(ContinuousClock.now - start >= .milliseconds(150))
        #expect(events.closed.first() != nil)
        #expect(transport.statisticsSync().idleConnectionsClosed == 1)
    }

    @Test("a peer dripping a message a byte at a time is closed at the idle timeout; one that completes messages stays")
    func dripperIsClosed() throws {
        let (loop, transport, inbox, address) = try listening(
            "127.0.0.1", limits: TransportLimits(idleConnectionTimeout: .milliseconds(300)))
        defer { loop.shutdown() }
        let dripper = try RawSocket(connectingTo: address)
        let talker = try RawSocket(connectingTo: address)
        let message = Array(sipMessage("drip"))
        var closedWhileDripping = false
        var probe = [UInt8](repeating: 0, count: 64)
        for index in 0..<20 {  // 20 × 50 ms: well past the idle timeout, never a whole message
            dripper.write(Data([message[index]]))
            if index % 4 == 0 { talker.write(sipMessage("talk-\(index)")) }
            usleep(50_000)
            // Were single bytes progress, the dripper would stay open for as long as they come.
            let got = recv(dripper.fd, &probe, probe.count, Int32(MSG_DONTWAIT))
            if got == 0 || (got < 0 && errno == ECONNRESET) {
                closedWhileDripping = true
                break
            }
        }
        #expect(closedWhileDripping)
        talker.write(sipMessage("talk-last"))  // within the talker's idle timeout: it is still open
        #expect(inbox.wait(for: 3) != nil, "the talker's messages arrived, the last after the dripper was closed")
        #expect(transport.statisticsSync().idleConnectionsClosed == 1, "only the dripper was closed")
    }

    @Test("one source gets at most maxConnectionsPerSource connections; other sources still connect")
    func connectionsPerSource() throws {
        let (loop, transport, inbox, address) = try listening("127.0.0.1", limits: TransportLimits(maxConnectionsPerSource: 3))
        defer { loop.shutdown() }
        let attacker = try (0..<3).map { _ in try RawSocket(connectingTo: address, from: "127.0.0.2") }
        for (index, socket) in attacker.enumerated() { socket.write(sipMessage("held-\(index)")) }
        #expect(inbox.wait(for: 3) != nil)
        let refused = try RawSocket(connectingTo: address, from: "127.0.0.2")
        #expect(refused.waitForClose())
        let other = try RawSocket(connectingTo: address)
        other.write(sipMessage("other host"))
        #expect(inbox.wait(for: 4) != nil, "another source is served")
        let statistics = transport.statisticsSync()
        #expect(statistics.connectionsRefusedPerSource == 1 && statistics.connectionsRefused == 1)
        attacker[0].hangUp()
        let deadline = ContinuousClock.now + .seconds(2)
        while transport.statisticsSync().connectionsClosed < 2 && ContinuousClock.now < deadline { usleep(5_000) }
        let again = try RawSocket(connectingTo: address, from: "127.0.0.2")
        again.write(sipMessage("room again"))
        #expect(inbox.wait(for: 5) != nil, "a closed connection frees its source's slot")
    }

    @Test("a peer that stops reading: the write queue overflows, the connection closes, unsent messages fail")
    func queueOverflow() throws {
        let (loop, transport, inbox, address) = try listening(
            "127.0.0.1", limits: TransportLimits(maxQueuedBytesPerConnection: 256 << 10))
        defer { loop.shutdown() }
        let events = TransportEvents(transport)
        let client = try RawSocket(connectingTo: address)
        client.write(sipMessage("hello"))
        let destination = try #require(inbox.first()).replyDestination
        let chunk = sipMessage("big", body: String(repeating: "z", count: 60_000))
        loop.execute {
            for _ in 0..<400 { transport.send(chunk, to: destination) }
        }
        #expect(events.closed.first() == destination.connection)
        let failures = try #require(events.failures.first())
        #expect(failures.error == .queueOverflow(destination.address))
        let stats = transport.statisticsSync()
        // Later sends open a new connection to the peer's (non-listening) port, which overflows in turn while it
        // connects: one overflow at least.
        #expect(stats.queueOverflows >= 1)
        #expect(stats.sendFailures > 0)
        #expect(stats.connectionsOpen == 0)
    }
}
