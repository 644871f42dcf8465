import ConversationKit
import Foundation
import ParleyEngine
import ParleyTestSupport
import SIPMessages
import SIPTransport

/// The stateful target, as PJSIP's fuzz-sip-transaction is: one input is a script of steps a peer and the user could
/// take against one engine on a manual timeline — SIP messages built from templates with fuzzed fields (or raw bytes),
/// replies to what the engine sent, the user's actions, and time passing — so the transaction, dialog and call-leg
/// machines see sequences no test wrote. Beyond not crashing (a trap is a broken invariant of ours), one invariant
/// is checked: once ten minutes pass with nothing new, no transaction is left (every one ends by its timers).
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzSIPEngine(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    var script = Script(bytes: UnsafeBufferPointer(start: data, count: size))
    let run = EngineRun()
    while !script.isEmpty && run.steps < 64 {
        run.step(&script)
    }
    run.environment.keepsSent = false  // what the engine sends from here on is retransmissions and timeouts
    run.environment.advance(by: .seconds(600))
    let statistics = run.engine.statistics
    if statistics.liveTransactions != 0 {
        fatalError("\(statistics.liveTransactions) transactions still live ten minutes after the last step "
            + "(\(statistics.pendingRequests) of them ours, client transactions)")
    }
    run.manager.invalidate()
    return 0
}

/// The input, read a byte or a chunk at a time (zeros once it runs out).
struct Script {
    var bytes: UnsafeBufferPointer<UInt8>
    var index = 0

    init(bytes: UnsafeBufferPointer<UInt8>) { self.bytes = bytes }

    var isEmpty: Bool { index >= bytes.count }

    mutating func byte() -> UInt8 {
        guard index < bytes.count else { return 0 }
        defer { index += 1 }
        return bytes[index]
    }

    /// One of `choices`, by the next byte.
    mutating func pick<T>(_ choices: [T]) -> T { choices[Int(byte()) % choices.count] }

    /// Up to `limit` bytes, the length taken from the next byte.
    mutating func chunk(limit: Int = 255) -> [UInt8] {
        let count = min(Int(byte()) % (limit + 1), bytes.count - index)
        guard count > 0 else { return [] }
        defer { index += count }
        return Array(bytes[index..<index + count])
    }
}

/// One engine, its manager, the peer's view of what was sent.
final class EngineRun {
    /// `PARLEY_FUZZ_TRACE=1` prints every step and the engine's log, to read what an input did.
    static let tracing = ProcessInfo.processInfo.environment["PARLEY_FUZZ_TRACE"] != nil
    let environment = ManualSIPEnvironment()
    /// The last requests the engine sent, and what a peer learns from its messages.
    private var requests: [SIPRequest] = []
    private var learnt = Learnt()
    let manager: ConversationManager
    let engine: ParleyEngine
    let local = ListenAddress(kind: .udp, host: "127.0.0.1", port: 5070)
    let peers = [SIPPeerAddress(host: "127.0.0.1", port: 5062), SIPPeerAddress(host: "127.0.0.2", port: 5062)]
    private(set) var steps = 0

    init() {
        var configuration = EngineConfiguration(listenAddresses: [local], ringTimeout: .seconds(30))
        configuration.maxRequestsPerSource = 20  // the ban (1 s) is met, and served, within a script
        configuration.sourceBan = .seconds(1)
        configuration.maxRingingPerSource = 3
        manager = try! ConversationManager(configuration: .init(supportsVideo: true), clock: ManualClock())
        engine = ParleyEngine(configuration: configuration, manager: manager, environment: environment,
            log: Self.tracing ? EngineLog(level: .debug) { _, line in print("log: \(line)") } : .silent)
        environment.onSend = { [unowned self] sent in self.heard(sent.message) }
    }

    /// Keeps what a peer learns from `message`, and the last few requests to reply to.
    private func heard(_ message: SIPMessage) {
        switch message {
        case .response(let response):
            learnt.tag = response.headers.to?.tag ?? learnt.tag
        case .request(let request):
            learnt.tag = request.headers.from?.tag ?? learnt.tag
            if request.method == .invite { learnt.callID = request.headers.callID }
            requests.append(request)
            if requests.count > 4 { requests.removeFirst() }
        }
        _ = environment.takeSent()  // the peer keeps only this much
    }

    func step(_ script: inout Script) {
        steps += 1
        switch script.byte() % 8 {
        case 0, 1: deliver(PeerRequest.make(&script, learnt: learnt), from: script.pick(peers))
        case 2: replyToSent(&script)
        case 3: perform(&script)
        case 4: environment.advance(by: .milliseconds(Int64(script.byte()) * 250))
        case 5: deliver(Data(script.chunk()), from: script.pick(peers))
        case 6: retransmitLastReceived()
        default: deliver(PeerRequest.make(&script, learnt: learnt), from: peers[0])
        }
    }

    private var lastDelivered: (Data, SIPPeerAddress)?

    func deliver(_ bytes: Data, from source: SIPPeerAddress) {
        if Self.tracing {
            print("deliver from \(source.host):\n\(String(decoding: bytes, as: UTF8.self))")
        }
        lastDelivered = (bytes, source)
        engine.receive(InboundSIPMessage(bytes: bytes, kind: .udp, source: source, connection: nil, local: local))
    }

    func retransmitLastReceived() {
        guard let (bytes, source) = lastDelivered else { return }
        deliver(bytes, from: source)
    }

    /// A response to one of the requests the engine sent, echoing its headers as a peer does.
    func replyToSent(_ script: inout Script) {
        guard !requests.isEmpty else { return }
        let request = requests[requests.count - 1 - Int(script.byte()) % requests.count]
        let status = script.pick([100, 180, 183, 200, 200, 401, 407, 408, 481, 486, 487, 491, 500, 503, 603, 302])
        var text = "SIP/2.0 \(status) Fuzz\r\n"
        for name in ["Via", "From", "Call-ID", "CSeq"] { text += "\(name): \(request.headers[name] ?? "")\r\n" }
        var to = request.headers["To"] ?? ""
        if status > 100 && !to.contains("tag=") { to += ";tag=peer-\(script.byte() % 3)" }
        // A 302 redirects to another peer (or back to one tried, or to sips:): the engine follows it or not.
        let contact = status == 302
            ? script.pick(["<sip:carol@127.0.0.1:5062>", "<sip:peer@127.0.0.1:5062>", "<sips:carol@127.0.0.1:5062>", "<sip:dave@127.0.0.2:5062>"])
            : "<sip:peer@127.0.0.1:5062>"
        text += "To: \(to)\r\nContact: \(contact)\r\n"
        if status == 401 || status == 407 {
            text += (status == 401 ? "WWW" : "Proxy") + "-Authenticate: Digest realm=\"fuzz\", nonce=\"n\(script.byte())\"\r\n"
        }
        let body = status == 200 && script.byte() % 2 == 0 ? PeerRequest.offer : ""
        if !body.isEmpty { text += "Content-Type: application/sdp\r\n" }
        text += "Content-Length: \(body.utf8.count)\r\n\r\n\(body)"
        deliver(Data(text.utf8), from: peers[0])
    }

    /// One of the user's actions on one of the live conversations (or a new call).
    func perform(_ script: inout Script) {
        let live = manager.conversations
        let kind = script.byte() % 11
        guard kind != 0, !live.isEmpty else {
            let handle = Handle(kind: .generic, value: "sip:bob@127.0.0.1:5062")
            try? manager.perform([.start(handles: [handle], isVideo: script.byte() % 4 == 0)])
            return
        }
        let uuid = live[Int(script.byte()) % live.count].uuid
        let action: ConversationAction
        switch kind {
        case 1, 2: action = .join(conversationUUID: uuid)
        case 3: action = .end(conversationUUID: uuid)
        case 4: action = .pause(conversationUUID: uuid, isPaused: script.byte() % 2 == 0)
        case 5: action = .mute(conversationUUID: uuid, isMuted: script.byte() % 2 == 0)
        case 6: action = .playTone(conversationUUID: uuid, digits: script.pick(["1", "#", "0*9"]))
        case 7: action = .merge(conversationUUID: uuid, with: live[Int(script.byte()) % live.count].uuid)
        case 8: action = .unmerge(conversationUUID: uuid)
        case 9:
            let target = Handle(kind: .generic, value: script.pick(["sip:carol@127.0.0.1:5066", "sip:parley@127.0.0.1:5070"]))
            action = .transfer(conversationUUID: uuid, to: target, timeoutDate: manager.clock.now().addingTimeInterval(100))
        default:
            let other = live[Int(script.byte()) % live.count].uuid
            guard let target = engine.attendedTransferTarget(to: other) else { return }
            action = .transfer(conversationUUID: uuid, to: target, timeoutDate: manager.clock.now().addingTimeInterval(100))
        }
        if Self.tracing { print("perform \(action)") }
        try? manager.perform([action])
    }
}

/// Requests a peer sends, from templates whose method, call, branch, tags, CSeq and body the script chooses.
enum PeerRequest {
    static let offer = "v=0\r\no=peer 1 1 IN IP4 127.0.0.1\r\ns=-\r\nc=IN IP4 127.0.0.1\r\nt=0 0\r\n"
        + "m=audio 6000 RTP/AVP 0 8 101\r\na=rtpmap:101 telephone-event/8000\r\n"

    static func make(_ script: inout Script, learnt: Learnt) -> Data {
        let method = script.pick([
            "INVITE", "INVITE", "ACK", "BYE", "CANCEL", "INFO", "OPTIONS", "UPDATE", "PRACK", "INVITE", "REFER", "NOTIFY",
        ])
        let call = script.byte() % 4
        // Call 3 is the last call the engine placed (its Call-ID and From tag learnt from its INVITE).
        let callID = call == 3 ? learnt.callID ?? "none@engine" : "fuzz-\(call)@peer"
        let branch = "z9hG4bK-f\(script.byte() % 6)"
        let cseq = Int(script.byte() % 4) + (method == "ACK" || method == "CANCEL" ? 0 : 1)
        var text = "\(method) sip:parley@127.0.0.1:5070 SIP/2.0\r\n"
        text += "Via: SIP/2.0/UDP 127.0.0.1:5062;branch=\(branch);rport\r\n"
        text += "Max-Forwards: \(script.pick(["70", "0", "1"]))\r\n"
        text += "From: <sip:alice@127.0.0.1:5062>;tag=a\(call)\r\n"
        // In dialog, the To tag is ours, which the peer learnt from what the engine sent (the last tag it used).
        let toTag = script.pick(["", "ours", "ours", "other"])
        text += "To: <sip:parley@127.0.0.1:5070>" + (toTag.isEmpty ? "" : ";tag=" + (toTag == "ours" ? learnt.tag ?? "x" : toTag)) + "\r\n"
        text += "Call-ID: \(callID)\r\n"
        text += "CSeq: \(cseq) \(method == "CANCEL" || method == "ACK" ? script.pick(["INVITE", method]) : method)\r\n"
        text += "Contact: <sip:alice@127.0.0.1:5062>\r\n"
        // Transfer: the REFER's Refer-To (blind, attended with Replaces, odd), an INVITE's Replaces naming one of the
        // calls (or not), a NOTIFY's event. Script bytes become a header value only where a template uses them.
        let tag = learnt.tag ?? "x"
        func fuzzed(_ script: inout Script) -> String {
            String(decoding: script.chunk(limit: 60), as: UTF8.self).replacingOccurrences(of: "\r\n", with: " ")
        }
        if method == "REFER" {
            let raw = fuzzed(&script)
            text += "Refer-To: " + script.pick([
                "<sip:carol@127.0.0.1:5066>", "<sip:carol@127.0.0.1:5066?Replaces=fuzz-\(call)%40peer%3Bto-tag%3D\(tag)%3Bfrom-tag%3Da\(call)>",
                "<sip:carol@127.0.0.1:5066?Replaces=\(raw)>", "<tel:+14155550100>", "<sip:parley@127.0.0.1:5070>", raw,
                "<sip:a@127.0.0.1:5066>, <sip:b@127.0.0.1:5066>",
            ]) + "\r\n"
        } else if method == "INVITE", script.byte() % 3 == 0 {
            // From the receiver's side (RFC 3891): to-tag ours, from-tag the peer's (a<call> on the peer's calls,
            // peer-<n> in its replies to ours).
            let raw = fuzzed(&script)
            text += "Replaces: " + script.pick([
                "fuzz-\(script.byte() % 4)@peer;to-tag=\(tag);from-tag=a\(script.byte() % 4)",
                "fuzz-0@peer;to-tag=\(tag);from-tag=a0;early-only",
                "\(learnt.callID ?? "x");to-tag=\(tag);from-tag=peer-\(script.byte() % 3)", raw,
            ]) + "\r\n"
        } else if method == "NOTIFY" {
            let raw = fuzzed(&script)
            text += "Event: " + script.pick(["refer", "refer;id=1", "presence", raw]) + "\r\nSubscription-State: "
                + script.pick(["active", "terminated;reason=noresource"]) + "\r\n"
        }
        var body = ""
        switch script.byte() % 4 {
        case 0:
            body = offer + script.pick(["", "a=sendonly\r\n", "a=inactive\r\n", "m=video 6002 RTP/AVP 96\r\n"])
            text += "Content-Type: application/sdp\r\n"
        case 1 where method == "INFO":
            body = "Signal=\(script.pick(["5", "#", "x"]))\r\nDuration=160\r\n"
            text += "Content-Type: application/dtmf-relay\r\n"
        case 1 where method == "NOTIFY":
            let raw = fuzzed(&script)
            body = script.pick(["SIP/2.0 100 Trying\r\n", "SIP/2.0 200 OK", "SIP/2.0 486 Busy Here\r\n", "SIP/2.0 99 x", raw])
            text += "Content-Type: message/sipfrag;version=2.0\r\n"
        case 2:
            text += String(decoding: script.chunk(limit: 40), as: UTF8.self).replacingOccurrences(of: "\r\n\r\n", with: "") + "\r\n"
        default:
            break
        }
        text += "Content-Length: \(body.utf8.count)\r\n\r\n\(body)"
        return Data(text.utf8)
    }
}

/// What a peer learns from the engine's messages: the last tag it used (To of its responses, From of its requests)
/// and the Call-ID of the last request it sent.
struct Learnt {
    var tag: String?
    var callID: String?
}
