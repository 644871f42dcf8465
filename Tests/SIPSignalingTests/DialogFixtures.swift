import Foundation
import SIPMessages
import SIPSignaling
import Testing

/// Messages for the dialog tests: Alice (atlanta) calls Bob (biloxi) through two record-routing proxies, ss1 next to
/// Alice and ss2 next to Bob (RFC 3665 §3.2-style).
enum DialogFixture {
    static let callID = "3848276298220188511@atlanta.example.com"
    static let aliceTag = "9fxced76sl"
    static let bobTag = "314159"
    static let aliceContact = "<sip:alice@client.atlanta.example.com;transport=tcp>"
    static let bobContact = "<sip:bob@client.biloxi.example.com;transport=tcp>"
    /// Record-Route as it reaches Bob and comes back to Alice: the proxy nearest Bob first.
    static let recordRoutes = ["<sip:ss2.biloxi.example.com;lr>", "<sip:ss1.atlanta.example.com;lr>"]

    /// Parses CRLF-joined lines as one message (a failure to parse fails the calling test).
    static func parse(_ lines: [String], body: String = "") throws -> SIPMessage {
        try SIPMessage.parse(Data((lines.joined(separator: "\r\n") + "\r\n\r\n" + body).utf8))
    }

    /// The INVITE as Bob's UA receives it from ss2.
    static func incomingInvite(
        cseq: UInt32 = 1, recordRoutes: [String] = recordRoutes, contact: String? = aliceContact,
        requestURI: String = "sip:bob@client.biloxi.example.com;transport=tcp", transport: String = "TCP"
    ) throws -> SIPRequest {
        var lines = [
            "INVITE \(requestURI) SIP/2.0",
            "Via: SIP/2.0/\(transport) ss2.biloxi.example.com:5060;branch=z9hG4bK721e4.1",
            "Via: SIP/2.0/\(transport) ss1.atlanta.example.com:5060;branch=z9hG4bK2d4790.1;received=192.0.2.111",
            "Via: SIP/2.0/\(transport) client.atlanta.example.com:5060;branch=z9hG4bK74bf9;received=192.0.2.101",
            "Max-Forwards: 68",
        ]
        if !recordRoutes.isEmpty { lines.append("Record-Route: " + recordRoutes.joined(separator: ", ")) }
        lines += [
            "From: Alice <sip:alice@atlanta.example.com>;tag=\(aliceTag)",
            "To: Bob <sip:bob@biloxi.example.com>",
            "Call-ID: \(callID)",
            "CSeq: \(cseq) INVITE",
        ]
        if let contact { lines.append("Contact: \(contact)") }
        lines.append("Content-Length: 0")
        return try #require(try parse(lines).request)
    }

    /// The INVITE Alice's UA sends.
    static func outgoingInvite(cseq: UInt32 = 1, uri: String = "sip:bob@biloxi.example.com") -> SIPRequest {
        SIPRequest(
            method: .invite, uri: SIPURI(uri)!,
            via: SIPVia(transport: "TCP", host: "client.atlanta.example.com", port: 5060, branch: "z9hG4bK74bf9"),
            from: SIPAddress(
                displayName: "Alice", uri: SIPURI("sip:alice@atlanta.example.com")!, parameters: ["tag": aliceTag]),
            to: SIPAddress(displayName: "Bob", uri: SIPURI("sip:bob@biloxi.example.com")!), callID: callID, cseq: cseq,
            contact: SIPAddress(uri: SIPURI("sip:alice@client.atlanta.example.com;transport=tcp")!))
    }

    /// A response Alice receives to `request`, written on the wire by Bob (and the proxies) and parsed.
    static func responseFromBob(
        to request: SIPRequest, statusCode: Int, toTag: String? = bobTag, recordRoutes: [String] = recordRoutes,
        contact: String? = bobContact
    ) throws -> SIPResponse {
        var headers = SIPHeaders()
        if !recordRoutes.isEmpty { headers.append("Record-Route", recordRoutes.joined(separator: ", ")) }
        if let contact { headers.append("Contact", contact) }
        let response = request.makeResponse(statusCode: statusCode, toTag: toTag, headers: headers)
        return try #require(try SIPMessage.parse(response.serialize()).response)
    }

    /// Bob's answer to an INVITE he received: Record-Route copied, his tag and Contact added.
    static func bobAnswer(to request: SIPRequest, statusCode: Int) -> SIPResponse {
        request.makeResponse(
            statusCode: statusCode, toTag: bobTag, copyingRecordRoute: true, headers: ["Contact": bobContact])
    }

    /// Bob's confirmed dialog with Alice (Bob is the callee).
    static func bobsDialog(localSequence: UInt32 = 0) throws -> SIPDialog {
        let invite = try incomingInvite()
        let ringing = bobAnswer(to: invite, statusCode: 180)
        var dialog = try #require(SIPDialog.asCallee(request: invite, response: ringing, localSequence: localSequence))
        dialog.respond(bobAnswer(to: invite, statusCode: 200))
        return dialog
    }

    /// Alice's confirmed dialog with Bob (Alice is the caller).
    static func alicesDialog(cseq: UInt32 = 1) throws -> SIPDialog {
        let invite = outgoingInvite(cseq: cseq)
        return try #require(SIPDialog.asCaller(request: invite, response: responseFromBob(to: invite, statusCode: 200)))
    }

    /// A request Alice sends inside Bob's dialog, as Bob receives it.
    static func requestFromAlice(
        _ method: SIPMethod, cseq: UInt32, contact: String? = nil, branch: String = "z9hG4bKa1"
    ) throws -> SIPRequest {
        var lines = [
            "\(method.token) sip:bob@client.biloxi.example.com;transport=tcp SIP/2.0",
            "Via: SIP/2.0/TCP client.atlanta.example.com:5060;branch=\(branch)",
            "Max-Forwards: 70",
            "Route: <sip:ss2.biloxi.example.com;lr>",
            "From: Alice <sip:alice@atlanta.example.com>;tag=\(aliceTag)",
            "To: Bob <sip:bob@biloxi.example.com>;tag=\(bobTag)",
            "Call-ID: \(callID)",
            "CSeq: \(cseq) \(method.token)",
        ]
        if let contact { lines.append("Contact: \(contact)") }
        lines.append("Content-Length: 0")
        return try #require(try parse(lines).request)
    }

    /// A Via for a new client transaction.
    static func via(_ branch: String, host: String = "client.biloxi.example.com") -> SIPVia {
        SIPVia(transport: "TCP", host: host, port: 5060, branch: branch)
    }

    /// The serialized text of a message, for comparisons.
    static func text(_ request: SIPRequest) -> String {
        String(decoding: request.serialize(), as: UTF8.self)
    }
}

/// A deterministic random number generator (SplitMix64) for the glare tests.
struct SeededGenerator: RandomNumberGenerator {
    private var state: UInt64

    init(seed: UInt64) {
        state = seed
    }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
