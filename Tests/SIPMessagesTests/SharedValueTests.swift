import Foundation
import Testing

@testable import SIPMessages

/// URIs and addresses share their parts between copies (`SharedValue`); they must still behave as plain values.
@Suite("Shared parts: URIs and addresses are values")
struct SharedValueTests {
    private static let original = SIPAddress(
        displayName: "Alice", uri: SIPURI(user: "alice", host: "example.com", parameters: ["transport": "tcp"]),
        parameters: ["tag": "a1"])

    @Test("changing a copy, however deep, leaves the original as it was")
    func copiesAreIndependent() {
        let original = Self.original
        var copy = original
        copy.uri.port = 5070
        copy.uri.parameters.append(SIPParameter(name: "lr", value: nil))
        copy.uri.user = "bob"
        copy.tag = "b2"
        copy.displayName = nil
        #expect(original.uri.port == nil)
        #expect(original.uri.parameters == ["transport": "tcp"])
        #expect(original.uri.user == "alice")
        #expect(original.tag == "a1")
        #expect(original.displayName == "Alice")
        #expect(original.headerValue == "\"Alice\" <sip:alice@example.com;transport=tcp>;tag=a1")
        #expect(copy.headerValue == "<sip:bob@example.com:5070;transport=tcp;lr>;tag=b2")

        var uri = original.uri
        let before = uri
        uri.headers.append(SIPParameter(name: "Subject", value: "hi"))
        #expect(before.headers.isEmpty && original.uri.headers.isEmpty)
        #expect(uri.headers.count == 1)
    }

    @Test("equality and hashing compare the parts, not where they are kept")
    func equalityIsByParts() throws {
        let built = SIPAddress(
            displayName: "Alice", uri: SIPURI(user: "alice", host: "example.com", parameters: ["transport": "tcp"]),
            parameters: ["tag": "a1"])
        let parsed = try #require(OSIPHeaderReader.address(Self.original.headerValue))
        for other in [built, parsed] {
            #expect(other == Self.original)
            #expect(other.hashValue == Self.original.hashValue)
        }
        var changed = Self.original
        changed.tag = "a2"
        #expect(changed != Self.original)
        changed.tag = "a1"
        #expect(changed == Self.original, "changed back: equal again, though its parts are kept apart now")
        #expect(Set([Self.original, built, changed]).count == 1)
        #expect("\(Self.original)".contains("alice@example.com"), "printed by its parts: \(Self.original)")
    }
}
