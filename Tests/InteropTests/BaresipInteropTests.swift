import Foundation
import Testing

/// baresip 1.0.0, a real softphone, against parleyd on loopback: calls both ways over UDP, TCP and TLS, hang-ups
/// from either side, and hold and resume from either side. Each test asserts the exact lifecycle transitions parleyd
/// logged and, from baresip's SIP trace, what went over the wire; a failure quotes baresip's trace.
@Suite("Interop: baresip", .serialized, .timeLimit(.minutes(1)))
struct BaresipInteropTests {
    /// A certificate for the TLS cases, nil for the others.
    static func certificate(for transport: SIPTransportName) throws -> SelfSignedCertificate? {
        transport == .tls ? try SelfSignedCertificate() : nil
    }

    /// The first final answer to an INVITE in baresip's trace.
    static func inviteAnswer(_ baresip: Baresip) -> TracedMessage? {
        baresip.messages.first { $0.startLine.hasPrefix("SIP/2.0 2") && $0.header("CSeq")?.hasSuffix("INVITE") == true }
    }

    @Test("baresip calls parleyd (auto-answer) and hangs up", arguments: SIPTransportName.allCases)
    func baresipCallsAndHangsUp(transport: SIPTransportName) throws {
        let certificate = try Self.certificate(for: transport)
        let parleyd = try Parleyd(["--auto-answer", "0"], tls: certificate?.files)
        let baresip = try Baresip(dial: parleyd.uri(transport), certificate: certificate)
        try baresip.quotingTranscript {
            try baresip.waitFor("parleyd's 200 OK") { $0.hasPrefix("SIP/2.0 200") }
        }
        // baresip (libre) sends in-dialog requests, the ACK first, only to sip: URIs: a sips: Contact from parleyd in
        // answer to a sip: request (RFC 3261 §12.1.1 asks for sips only when the request was sips) strands the call.
        let contact = Self.inviteAnswer(baresip)?.header("Contact")
        #expect(contact?.hasPrefix("<sip:") == true, "parleyd answered a sip: INVITE with Contact \(contact ?? "none")")
        try baresip.quotingTranscript {
            try parleyd.waitForTransition(to: "joined")
            try baresip.waitFor("its call established") { $0.contains("Call established") }
            try baresip.send("/hangup")
            try parleyd.waitForEnded(1, timeout: .seconds(5))
            // parleyd ends the call as it answers the BYE; baresip's trace of that answer may print a moment later.
            try baresip.waitFor(count: 2, "parleyd's 200 OK to its BYE") { $0.hasPrefix("SIP/2.0 200") }
        }
        #expect(parleyd.transitions == [["ringing", "joining", "joined", "left (remoteEnded)"]],
            "\(baresip.transcript)")
        // parleyd answered on the transport it was called on, and said yes to the BYE.
        let answers = baresip.messages.filter { $0.startLine.hasPrefix("SIP/2.0 200") }
        #expect(answers.map { $0.header("CSeq")?.split(separator: " ").last ?? "" } == ["INVITE", "BYE"])
        #expect(answers.allSatisfy { $0.path.hasPrefix(transport.rawValue.uppercased() + " ") })
    }

    @Test("parleyd calls baresip (answermode=auto) and hangs up itself", arguments: SIPTransportName.allCases)
    func parleydCallsAndHangsUp(transport: SIPTransportName) throws {
        let certificate = try Self.certificate(for: transport)
        let baresip = try Baresip(certificate: certificate)
        let parleyd = try Parleyd(
            ["--call", baresip.uri(transport), "--script", "wait 300; end"], tls: certificate?.files)
        try baresip.quotingTranscript {
            try parleyd.waitForEnded(1, timeout: .seconds(5))
            try baresip.waitFor("the end of its session") { $0.contains("session closed") }
        }
        #expect(parleyd.transitions == [["idle", "ringing", "joined", "leaving", "left (localEnded)"]],
            "\(baresip.transcript)")
        let finals = baresip.messages.map(\.startLine).filter { !$0.hasPrefix("SIP/2.0 1") }
        let methods = finals.map { String($0.prefix { $0 != " " }) }
        #expect(methods == ["INVITE", "SIP/2.0", "ACK", "BYE", "SIP/2.0"], "\(baresip.transcript)")
    }

    @Test("parleyd calls baresip, baresip hangs up", arguments: SIPTransportName.allCases)
    func parleydCallsBaresipHangsUp(transport: SIPTransportName) throws {
        let certificate = try Self.certificate(for: transport)
        let baresip = try Baresip(certificate: certificate)
        let parleyd = try Parleyd(["--call", baresip.uri(transport)], tls: certificate?.files)
        try baresip.quotingTranscript {
            try parleyd.waitForTransition(to: "joined")
            try baresip.waitFor("its call established") { $0.contains("Call established") }
        }
        // As above: baresip can send its BYE only to a sip: Contact (we called a sip: URI).
        let contact = baresip.messages.first { $0.startLine.hasPrefix("INVITE ") }?.header("Contact")
        #expect(contact?.hasPrefix("<sip:") == true, "parleyd's INVITE to a sip: URI had Contact \(contact ?? "none")")
        try baresip.quotingTranscript {
            try baresip.send("/hangup")
            try parleyd.waitForEnded(1, timeout: .seconds(5))
        }
        #expect(parleyd.transitions == [["idle", "ringing", "joined", "left (remoteEnded)"]], "\(baresip.transcript)")
    }

    @Test("baresip holds and resumes parleyd (sendonly, sendrecv): parleyd answers recvonly, sendrecv; stays joined; events say so")
    func baresipHoldsAndResumes() throws {
        let parleyd = try Parleyd(["--auto-answer", "0"])
        let watch = try RunningProcess(
            try Interop.binary("parley"), ["watch", "--json", "--data-dir", parleyd.dataDirectory.path], name: "parley watch")
        defer { watch.process.terminate() }
        _ = try watch.waitForLine("the subscription") { _ in true }
        let baresip = try Baresip(dial: parleyd.uri(.udp))
        let isACK: (String) -> Bool = { $0.hasPrefix("CSeq: ") && $0.hasSuffix(" ACK") }
        try baresip.quotingTranscript {
            try parleyd.waitForTransition(to: "joined")
            try baresip.waitFor("the ACK of its INVITE", isACK)
            try baresip.send("/hold")
            try parleyd.process.waitForLine(timeout: .seconds(5), "the remote hold") { $0.hasSuffix("put us on hold") }
            try baresip.waitFor(count: 2, "the ACK of its hold re-INVITE", isACK)
            try baresip.send("/resume")
            try parleyd.process.waitForLine(timeout: .seconds(5), "the remote resume") { $0.hasSuffix("side resumed") }
            try baresip.waitFor(count: 3, "the ACK of its resume re-INVITE", isACK)
            try baresip.send("/hangup")
            try parleyd.waitForEnded(1, timeout: .seconds(5))
        }
        // A remote hold is an update of the conversation, not our pause.
        #expect(parleyd.transitions == [["ringing", "joining", "joined", "left (remoteEnded)"]],
            "\(baresip.transcript)")
        let holdLines = parleyd.process.lines.filter { $0.contains("the remote side") }
        #expect(holdLines.count == 2 && holdLines[0].hasSuffix("put us on hold") && holdLines[1].hasSuffix("resumed"))
        // A frontend watching sees the remote hold and the resume as data.
        _ = try watch.waitForLine("the conversation leaving") { $0.contains(#""state":"left""#) }
        let heldFlags = watch.lines.compactMap { line -> Bool? in
            guard let event = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                let data = event["data"] as? [String: Any], (data["changes"] as? [String])?.contains("isRemotelyHeld") == true
            else { return nil }
            return (data["conversation"] as? [String: Any])?["isRemotelyHeld"] as? Bool
        }
        #expect(heldFlags == [true, false], "\(watch.lines)")
        let invites = baresip.messages.filter { $0.startLine.hasPrefix("INVITE ") }
        let answers = baresip.messages.filter {
            $0.startLine.hasPrefix("SIP/2.0 200") && $0.header("CSeq")?.hasSuffix("INVITE") == true
        }
        #expect(invites.map(\.direction) == ["sendrecv", "sendonly", "sendrecv"], "\(baresip.transcript)")
        #expect(answers.map(\.direction) == ["sendrecv", "recvonly", "sendrecv"], "\(baresip.transcript)")
    }

    @Test("parleyd holds and resumes baresip (sendonly, sendrecv): baresip answers recvonly, then sendrecv")
    func parleydHoldsAndResumes() throws {
        let baresip = try Baresip()
        let parleyd = try Parleyd([
            "--call", baresip.uri(.udp), "--script", "wait 300; hold; wait 300; resume; wait 200; end",
        ])
        try baresip.quotingTranscript {
            try parleyd.waitForEnded(1, timeout: .seconds(6))
            try baresip.waitFor("the end of its session") { $0.contains("session closed") }
        }
        #expect(
            parleyd.transitions == [["idle", "ringing", "joined", "paused", "joined", "leaving", "left (localEnded)"]],
            "\(baresip.transcript)")
        let reinvites = baresip.messages.filter { $0.startLine.hasPrefix("INVITE ") }.dropFirst()
        let answers = baresip.messages.filter {
            $0.startLine.hasPrefix("SIP/2.0 200") && $0.header("CSeq")?.hasSuffix("INVITE") == true
        }.dropFirst()
        #expect(reinvites.map(\.direction) == ["sendonly", "sendrecv"], "\(baresip.transcript)")
        #expect(answers.map(\.direction) == ["recvonly", "sendrecv"], "\(baresip.transcript)")
        #expect(baresip.lines.filter { $0.contains("got re-INVITE") }.count == 2)
    }
}
