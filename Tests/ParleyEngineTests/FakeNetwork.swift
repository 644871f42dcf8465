import CallHistory
import ConversationKit
import Foundation
import ParleyEngine
import SIPMessages
import SIPTransport
import ParleyTestSupport
import Synchronization

/// The engine tests' environment: the shared manual timeline.
typealias FakeEnvironment = ManualSIPEnvironment

/// A call history in a fresh temporary directory, removed when the value goes.
final class TemporaryHistory {
    let directory: URL
    let store: SQLiteCallHistory

    init(_ name: String) throws {
        directory = FileManager.default.temporaryDirectory.appending(path: "parley-\(name)-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        store = try SQLiteCallHistory(path: directory.appending(path: "history.sqlite").path)
    }

    /// A recorder into the store, for an engine harness.
    var recorder: HistoryRecorder { HistoryRecorder(store: store, configuration: .init()) }

    deinit { try? FileManager.default.removeItem(at: directory) }
}

/// Records the transitions the engine announces.
final class TransitionLog: Sendable {
    private let lines = Mutex<[String]>([])
    private let transitions = Mutex<[ConversationTransition]>([])

    func add(_ transition: ConversationTransition) {
        transitions.withLock { $0.append(transition) }
        lines.withLock {
            let to = transition.conversation.state == .left
                ? "left(\(transition.conversation.endedReason?.description ?? "?"))"
                : "\(transition.conversation.state)"
            $0.append(to)
        }
    }

    /// The states entered, in order: `["ringing", "joining", "joined", "left(remoteEnded)"]`.
    var states: [String] { lines.withLock { $0 } }
    var all: [ConversationTransition] { transitions.withLock { $0 } }
}

/// One engine on a fake network, with a scripted remote peer at 127.0.0.1:5062.
final class EngineHarness {
    let environment = FakeEnvironment()
    let manager: ConversationManager
    let engine: ParleyEngine
    let transitions = TransitionLog()
    let local: ListenAddress
    let peer = SIPPeerAddress(host: "127.0.0.1", port: 5062)

    init(
        history: HistoryRecorder? = nil, journal: LiveCallJournal? = nil,
        local: ListenAddress = ListenAddress(kind: .udp, host: "127.0.0.1", port: 5070),
        video: Bool = false, media: CallMediaHandler? = nil, locator: SIPServerLocator? = nil, log: EngineLog = .silent,
        configure: (inout EngineConfiguration) -> Void = { _ in }
    ) throws {
        self.local = local
        var configuration = EngineConfiguration(listenAddresses: [local])
        configure(&configuration)
        manager = try ConversationManager(configuration: .init(supportsVideo: video), clock: ManualClock())
        engine = ParleyEngine(
            configuration: configuration, manager: manager, environment: environment, history: history, journal: journal,
            media: media, locator: locator, log: log)
        engine.observeTransitions { [transitions] in transitions.add($0) }
    }

    /// Delivers SIP text (LF line ends are turned into CRLF; Content-Length is computed) from the peer (or `source`).
    func deliver(_ text: String, body: String = "", from source: SIPPeerAddress? = nil, waited: Duration? = nil) {
        var lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        while lines.last?.isEmpty == true { lines.removeLast() }
        let bodyBytes = body.replacingOccurrences(of: "\n", with: "\r\n")
        lines.append("Content-Length: \(bodyBytes.utf8.count)")
        let message = lines.joined(separator: "\r\n") + "\r\n\r\n" + bodyBytes
        engine.receive(InboundSIPMessage(
            bytes: Data(message.utf8), kind: .udp, source: source ?? peer, connection: nil, local: local,
            waited: waited))
    }

    /// The only conversation.
    var conversation: Conversation? { manager.conversations.first }

    /// The requests and responses sent since the last look.
    func sent() -> [SIPMessage] { environment.takeSent().map(\.message) }
}

/// SIP text the scripted peer sends.
enum PeerMessages {
    static let offer = """
        v=0
        o=peer 1 1 IN IP4 127.0.0.1
        s=-
        c=IN IP4 127.0.0.1
        t=0 0
        m=audio 6000 RTP/AVP 0 8
        a=rtpmap:0 PCMU/8000
        a=rtpmap:8 PCMA/8000

        """

    /// The offer with a VP8 video stream added.
    static let videoOffer = offer + "m=video 6002 RTP/AVP 96\na=rtpmap:96 VP8/90000\n"

    static func holdOffer(version: Int) -> String {
        offer.replacingOccurrences(of: "o=peer 1 1", with: "o=peer 1 \(version)") + "a=sendonly\n"
    }

    static func invite(callID: String = "call-1@peer", branch: String = "z9hG4bK-in-1", cseq: Int = 1) -> String {
        """
        INVITE sip:parley@127.0.0.1:5070 SIP/2.0
        Via: SIP/2.0/UDP 127.0.0.1:5062;branch=\(branch)
        Max-Forwards: 70
        From: "Alice" <sip:alice@127.0.0.1:5062>;tag=peer-tag
        To: <sip:parley@127.0.0.1:5070>
        Call-ID: \(callID)
        CSeq: \(cseq) INVITE
        Contact: <sip:alice@127.0.0.1:5062>
        Content-Type: application/sdp
        """
    }

    /// A request from the peer outside any dialog (no To tag), without a body: a CANCEL, an OPTIONS.
    static func outOfDialog(_ method: String, cseq: Int, branch: String, callID: String) -> String {
        """
        \(method) sip:parley@127.0.0.1:5070 SIP/2.0
        Via: SIP/2.0/UDP 127.0.0.1:5062;branch=\(branch)
        Max-Forwards: 70
        From: "Alice" <sip:alice@127.0.0.1:5062>;tag=peer-tag
        To: <sip:parley@127.0.0.1:5070>
        Call-ID: \(callID)
        CSeq: \(cseq) \(method)
        """
    }

    /// An in-dialog request from the peer to us (our tag in To).
    static func inDialog(
        _ method: String, localTag: String, cseq: Int, branch: String, callID: String = "call-1@peer",
        contentType: String? = nil
    ) -> String {
        var text = """
            \(method) sip:parley@127.0.0.1:5070 SIP/2.0
            Via: SIP/2.0/UDP 127.0.0.1:5062;branch=\(branch)
            Max-Forwards: 70
            From: "Alice" <sip:alice@127.0.0.1:5062>;tag=peer-tag
            To: <sip:parley@127.0.0.1:5070>;tag=\(localTag)
            Call-ID: \(callID)
            CSeq: \(cseq) \(method)
            Contact: <sip:alice@127.0.0.1:5062>
            """
        if let contentType { text += "\nContent-Type: \(contentType)" }
        return text
    }

    /// A response from the peer to a request we sent, echoing its Via, From, To, Call-ID and CSeq.
    static func response(_ status: Int, _ reason: String, to request: SIPRequest, toTag: String? = "callee-tag", sdp: Bool = false) -> String {
        let headers = request.headers
        var to = headers["To"] ?? ""
        if let toTag, !to.contains("tag=") { to += ";tag=\(toTag)" }
        var text = """
            SIP/2.0 \(status) \(reason)
            Via: \(headers["Via"] ?? "")
            From: \(headers["From"] ?? "")
            To: \(to)
            Call-ID: \(headers["Call-ID"] ?? "")
            CSeq: \(headers["CSeq"] ?? "")
            Contact: <sip:bob@127.0.0.1:5062>
            """
        if sdp { text += "\nContent-Type: application/sdp" }
        return text
    }
}

extension SIPMessage {
    var statusCode: Int? { response?.statusCode }
    var method: String? { request.map { $0.method.description } }
    var toTag: String? { headers.to?.tag }
    var bodyText: String { String(decoding: body, as: UTF8.self) }
}
