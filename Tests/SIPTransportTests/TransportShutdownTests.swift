import Foundation
import ParleyIO
import ParleyTestSupport
import Testing

@testable import SIPTransport

@Suite("The event loop and the transports on it")
struct TransportShutdownTests {
    @Test("shutdown closes the sockets of transports on the loop")
    func shutdownClosesSockets() throws {
        let loop = try makeLoop()
        let (transport, _) = makeTransport(loop)
        let address = try transport.listenSync(ListenAddress(parsing: "tcp://127.0.0.1:0"))
        let client = try RawSocket(connectingTo: address)
        loop.shutdown()
        #expect(client.waitForClose())
        #expect(throws: TransportError.transportClosed) { try transport.listenSync(address) }
    }
}
