import Testing

@testable import ParleyIO

/// rtnetlink route messages read as default-route changes (the bytes as the kernel lays them out, little-endian).
@Suite("Route monitor: rtnetlink messages")
struct DefaultRouteChangeTests {
    /// One route message: nlmsghdr, rtmsg, then each attribute (type, value) padded to 4.
    static func message(type: UInt16, family: UInt8, destinationLength: UInt8 = 0, table: UInt8 = 254, attributes: [(UInt16, [UInt8])] = []) -> [UInt8] {
        func le16(_ value: UInt16) -> [UInt8] { [UInt8(value & 0xff), UInt8(value >> 8)] }
        func le32(_ value: UInt32) -> [UInt8] { (0..<4).map { UInt8((value >> (8 * $0)) & 0xff) } }
        var body: [UInt8] = [family, destinationLength, 0, 0, table, 3, 0, 1] + le32(0)
        for (kind, value) in attributes {
            body += le16(UInt16(4 + value.count)) + le16(kind) + value
            while body.count % 4 != 0 { body.append(0) }
        }
        return le32(UInt32(16 + body.count)) + le16(type) + le16(0) + le32(1) + le32(0) + body
    }

    @Test("a default route added and one removed, IPv4 with its gateway and IPv6, in one datagram")
    func defaultRoutes() {
        let added = Self.message(type: 24, family: 2, attributes: [(5, [192, 0, 2, 254])])
        let removed = Self.message(type: 25, family: 10, attributes: [(5, [0x20, 0x01, 0x0d, 0xb8] + Array(repeating: 0, count: 11) + [1])])
        let changes = DefaultRouteChange.parse(added + removed)
        #expect(changes.count == 2)
        #expect(changes.first == DefaultRouteChange(added: true, isIPv6: false, gateway: IPAddress("192.0.2.254")))
        #expect(changes.first?.description == "the IPv4 default route via 192.0.2.254 was added")
        #expect(changes.last?.added == false && changes.last?.isIPv6 == true && changes.last?.gateway == IPAddress("2001:db8::1"))
    }

    @Test("routes that are not default routes of the main table, other messages and malformed bytes are skipped")
    func skipped() {
        let subnet = Self.message(type: 24, family: 2, destinationLength: 24)
        let local = Self.message(type: 24, family: 2, table: 255)
        let tableAttribute = Self.message(type: 24, family: 2, table: 252, attributes: [(15, [0x10, 0, 0, 0])])
        let address = Self.message(type: 20, family: 2)
        #expect(DefaultRouteChange.parse(subnet + local + tableAttribute + address).isEmpty)
        // The main table named by RTA_TABLE counts.
        #expect(DefaultRouteChange.parse(Self.message(type: 24, family: 2, table: 252, attributes: [(15, [254, 0, 0, 0])])).count == 1)
        let good = Self.message(type: 24, family: 2)
        for cut in [1, 15, 20, good.count - 1] {
            #expect(DefaultRouteChange.parse(Array(good.prefix(cut))).isEmpty, "cut at \(cut)")
        }
        var lying = good
        lying[0] = 255
        #expect(DefaultRouteChange.parse(lying).isEmpty)
        #expect(DefaultRouteChange.parse(Self.message(type: 24, family: 2, attributes: [(5, [1, 2, 3])])).first?.gateway == nil)
    }
}
