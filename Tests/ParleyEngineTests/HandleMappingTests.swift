import ConversationKit
import Foundation
import SIPMessages
import Testing

@testable import ParleyEngine

@Suite("Handles of callers")
struct HandleMappingTests {
    static func address(_ text: String) -> SIPAddress { SIPAddress(uri: SIPURI(text)!) }

    @Test("a From without a port takes the Contact's when user and host match (an unregistered UA, as parleyd)")
    func portFromContact() {
        let caller = HandleMapping.caller(from: Self.address("sip:bob@127.0.0.1"), contact: Self.address("sip:bob@127.0.0.1:5172"))
        #expect(caller.value == "sip:bob@127.0.0.1:5172")
    }

    @Test("an address of record keeps its own form: another host, another user, or a port of its own")
    func addressOfRecordKept() {
        let registered = HandleMapping.caller(from: Self.address("sip:bob@example.com"), contact: Self.address("sip:bob@10.0.0.5:5060"))
        #expect(registered.value == "sip:bob@example.com")
        let otherUser = HandleMapping.caller(from: Self.address("sip:bob@127.0.0.1"), contact: Self.address("sip:alice-0x1@127.0.0.1:5062"))
        #expect(otherUser.value == "sip:bob@127.0.0.1")
        let withPort = HandleMapping.caller(from: Self.address("sip:bob@127.0.0.1:5000"), contact: Self.address("sip:bob@127.0.0.1:5172"))
        #expect(withPort.value == "sip:bob@127.0.0.1:5000")
        let noContact = HandleMapping.caller(from: Self.address("sip:bob@127.0.0.1"), contact: nil)
        #expect(noContact.value == "sip:bob@127.0.0.1")
    }
}
