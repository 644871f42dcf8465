import ConversationKit
import Foundation
import ParleyEngine
import ParleyIO
import SIPTransport

/// `parley-bench-engine [CALLS]`: the SIP engine alone, without sockets: sipp-like INVITE, ACK and BYE messages are
/// fed to a `ParleyEngine` (auto-answer 0) on an in-memory environment, and the cost per call is printed. Used to
/// find where parleyd's CPU goes (it runs under callgrind, which the daemon's dispatchMain does not).
// @unchecked Sendable: one thread drives everything (`isCurrent` is always true).
final class InlineEnvironment: SIPEnvironment, @unchecked Sendable {
    /// Timers due at once (zero delay) run on `runDue`; later ones are kept but never fire (time does not move).
    private var dueNow: [(id: UInt64, work: () -> Void)] = []
    private var later: [UInt64: () -> Void] = [:]
    private var nextID: UInt64 = 1
    var sentBytes = 0
    var sentMessages = 0

    func send(_ bytes: Data, to destination: SIPDestination) {
        sentBytes += bytes.count
        sentMessages += 1
    }
    func schedule(after delay: Duration, _ work: @escaping () -> Void) -> EngineTimer {
        defer { nextID += 1 }
        if delay <= .zero { dueNow.append((nextID, work)) } else { later[nextID] = work }
        return EngineTimer(id: nextID)
    }
    func cancel(_ timer: EngineTimer) {
        if later.removeValue(forKey: timer.id) == nil { dueNow.removeAll { $0.id == timer.id } }
    }
    var now: Date { Date() }
    var uptime: Duration { ContinuousClock.now - started }
    private let started = ContinuousClock.now
    var isCurrent: Bool { true }
    func execute(_ work: @escaping @Sendable () -> Void) { work() }

    /// Runs timers due now (zero-delay ones, such as auto-answer 0).
    func runDue() {
        while !dueNow.isEmpty {
            let timer = dueNow.removeFirst()
            timer.work()
        }
    }
    var pending: Int { later.count + dueNow.count }
}

/// A message from lines written with LF (turned into CRLF here, outside the measured engine work as far as
/// possible: plain byte copies).
func message(_ text: String, body: String = "") -> Data {
    var bytes: [UInt8] = []
    bytes.reserveCapacity(text.utf8.count + body.utf8.count + 64)
    for byte in text.utf8 {
        if byte == 0x0A { bytes.append(0x0D) }
        bytes.append(byte)
    }
    bytes.append(contentsOf: Array("\r\nContent-Length: \(body.utf8.count)\r\n\r\n".utf8))
    bytes.append(contentsOf: Array(body.utf8))
    return Data(bytes)
}

let calls = CommandLine.arguments.count > 1 ? Int(CommandLine.arguments[1]) ?? 20_000 : 20_000
let environment = InlineEnvironment()
let manager = try ConversationManager(configuration: .init(includesConversationInRecents: false))
let local = ListenAddress(kind: .udp, host: "127.0.0.1", port: 5070)
let peer = SIPPeerAddress(host: "127.0.0.1", port: 5061)
var configuration = EngineConfiguration(listenAddresses: [local], autoAnswerDelay: .zero)
configuration.exemptSources = [peer.host]  // one peer sending every call: a load generator, not a flood
let engine = ParleyEngine(configuration: configuration, manager: manager, environment: environment)
let sdp = "v=0\r\no=user1 53655765 2353687637 IN IP4 127.0.0.1\r\ns=-\r\nc=IN IP4 127.0.0.1\r\nt=0 0\r\nm=audio 6000 RTP/AVP 0\r\na=rtpmap:0 PCMU/8000\r\n"

func feed(_ data: Data) {
    engine.receive(InboundSIPMessage(bytes: data, kind: .udp, source: peer, connection: nil, local: local))
}

/// The resident set in bytes (`/proc/self/statm`'s second field, in pages).
func heapInUse() -> Int {
    guard let statm = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8),
        let pages = statm.split(separator: " ").dropFirst().first.flatMap({ Int($0) })
    else { return 0 }
    return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
}

let heapBefore = heapInUse()
let start = ContinuousClock.now
for call in 0..<calls {
    let callID = "\(call)-bench@127.0.0.1"
    feed(message("""
        INVITE sip:parley@127.0.0.1:5070 SIP/2.0
        Via: SIP/2.0/UDP 127.0.0.1:5061;branch=z9hG4bK-\(call)-1-0
        From: sipp <sip:sipp@127.0.0.1:5061>;tag=\(call)SIPpTag00
        To: <sip:parley@127.0.0.1:5070>
        Call-ID: \(callID)
        CSeq: 1 INVITE
        Contact: sip:sipp@127.0.0.1:5061
        Max-Forwards: 70
        Subject: Performance Test
        Content-Type: application/sdp
        """, body: sdp))
    environment.runDue()
    // Our To tag, as the engine exposes it for tests (a call not answered has none).
    guard let toTag = engine.localTag(ofCallID: callID) else { fatalError("call \(call) was not answered") }
    feed(message("""
        ACK sip:parley@127.0.0.1:5070 SIP/2.0
        Via: SIP/2.0/UDP 127.0.0.1:5061;branch=z9hG4bK-\(call)-5-0
        From: sipp <sip:sipp@127.0.0.1:5061>;tag=\(call)SIPpTag00
        To: <sip:parley@127.0.0.1:5070>;tag=\(toTag)
        Call-ID: \(callID)
        CSeq: 1 ACK
        Contact: sip:sipp@127.0.0.1:5061
        Max-Forwards: 70
        Subject: Performance Test
        """))
    feed(message("""
        BYE sip:parley@127.0.0.1:5070 SIP/2.0
        Via: SIP/2.0/UDP 127.0.0.1:5061;branch=z9hG4bK-\(call)-7-0
        From: sipp <sip:sipp@127.0.0.1:5061>;tag=\(call)SIPpTag00
        To: <sip:parley@127.0.0.1:5070>;tag=\(toTag)
        Call-ID: \(callID)
        CSeq: 2 BYE
        Contact: sip:sipp@127.0.0.1:5061
        Max-Forwards: 70
        Subject: Performance Test
        """))
}
let elapsed = ContinuousClock.now - start
let heapHeld = heapInUse() - heapBefore
let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
let stats = engine.statistics
print("calls: \(calls), live calls left: \(stats.liveCalls), conversations left: \(manager.conversations.count)")
print("sent: \(environment.sentMessages) messages, pending timers: \(environment.pending)")
print(String(format: "per call: %.1f µs; calls/s on one core: %.0f", seconds / Double(calls) * 1e6, Double(calls) / seconds))
// Time does not move here, so every finished call's state waiting for timers J and L (32 s in parleyd) is still held.
print("memory (RSS) held per finished call (its timers J and L not yet fired): \(heapHeld / calls) bytes")
