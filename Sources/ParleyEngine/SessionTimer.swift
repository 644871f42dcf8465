import Foundation
import SIPMessages

/// RFC 4028 session timers as Parley asks for them: the session interval it proposes on its INVITEs and the shortest
/// one it takes from a peer (its Min-SE).
public struct SessionTimerConfiguration: Sendable, Equatable {
    /// The interval (seconds) our INVITEs propose in Session-Expires, and the longest we accept from a peer (a longer
    /// one is reduced to it in our 2xx). RFC 4028 suggests 1800.
    public var interval: Int
    /// Our Min-SE (seconds): an INVITE asking for less is refused with 422. RFC 4028 §5: at least 90.
    public var minimum: Int

    /// The RFC 4028 floor of every Min-SE.
    public static let lowestMinimum = 90

    /// A configuration: 1800 s proposed, 90 s at least.
    public init(interval: Int = 1800, minimum: Int = SessionTimerConfiguration.lowestMinimum) {
        self.interval = interval
        self.minimum = minimum
    }

    /// What is wrong with it, in words (empty when usable).
    var problems: [String] {
        var problems: [String] = []
        if minimum < Self.lowestMinimum { problems.append("the session timer's Min-SE must be at least 90 s (RFC 4028)") }
        if interval < minimum || interval > 86_400 {
            problems.append("the session timer must be between its Min-SE (\(minimum) s) and a day")
        }
        return problems
    }
}

/// The session timer a confirmed call runs (RFC 4028): the negotiated interval and whether we are the refresher.
///
/// ```
///  negotiated (2xx to an INVITE or re-INVITE, either way) ──▶ running: +sessionRefresh (ours: at interval/2),
///                                                                     +sessionExpiry (interval − min(32, interval/3))
///  running ──sessionRefresh──▶ our refresh re-INVITE (same SDP, same version) ──2xx──▶ negotiated again
///  running ──sessionExpiry (no refresh arrived, or ours kept failing)──▶ BYE, ended(sessionExpired)
///  running ──a re-INVITE either way answered 2xx──▶ negotiated again (the timers restart)
/// ```
struct SessionTimer: Equatable, Sendable {
    /// Which side of one transaction refreshes (RFC 4028 §4: the `refresher` parameter).
    enum Refresher: String, Sendable {
        /// The side that sent the request.
        case uac
        /// The side that answered it.
        case uas
    }

    /// The session interval, in seconds.
    var interval: Int
    /// Whether we send the refreshes (else the peer does, and we only watch for them).
    var weRefresh: Bool

    /// When the refresher refreshes: half the interval (RFC 4028 §10).
    var refreshAfter: Duration { .seconds(interval) / 2 }
    /// When the session expires without a refresh: the interval less a third of it or 32 s, whichever is less
    /// (RFC 4028 §10).
    var expiresAfter: Duration { .seconds(interval - min(32, interval / 3)) }

    /// The timers to (re)start for this session: the refresh when it is ours, the expiry in every case (our own
    /// refreshes keep failing: we end the session too).
    var startEffects: [CallLegEffect] {
        (weRefresh ? [.startTimer(.sessionRefresh, after: refreshAfter)] : [.cancelTimer(.sessionRefresh)])
            + [.startTimer(.sessionExpiry, after: expiresAfter)]
    }

    /// The `Session-Expires` value of a message of ours in a transaction where `weSentRequest`.
    func headerValue(weSentRequest: Bool) -> String {
        let refresher: Refresher = weRefresh == weSentRequest ? .uac : .uas
        return "\(interval);refresher=\(refresher.rawValue)"
    }

    // MARK: Header values

    /// A Session-Expires value: `delta-seconds *(;se-params)`.
    struct Expires: Equatable {
        var seconds: Int
        var refresher: Refresher?

        /// Reads `1800;refresher=uac`; nil when the delta is not a number (a peer fault: the header is ignored).
        init?(_ text: String) {
            let parts = text.split(separator: ";").map { $0.trimmingCharacters(in: .whitespaces) }
            guard let first = parts.first, !first.isEmpty, first.count <= 9, first.allSatisfy(\.isASCII),
                let seconds = Int(first), seconds > 0
            else { return nil }
            self.seconds = seconds
            refresher = nil
            for parameter in parts.dropFirst() {
                let pair = parameter.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
                if pair.count == 2, pair[0] == "refresher" { refresher = Refresher(rawValue: pair[1]) }
            }
        }
    }

    /// Whether an option tag is listed in a `Supported` or `Require` header (`k` is Supported's compact form).
    static func lists(_ headers: SIPHeaders, _ name: String, option: String) -> Bool {
        headers.values(name).contains { value in
            value.split(separator: ",").contains { $0.trimmingCharacters(in: .whitespaces).lowercased() == option }
        }
    }

    /// A Min-SE value's seconds (`90`, perhaps with parameters); nil when absent or not a number.
    static func minimum(in headers: SIPHeaders) -> Int? {
        guard let text = headers["Min-SE"]?.split(separator: ";").first?.trimmingCharacters(in: .whitespaces),
            !text.isEmpty, text.count <= 9, text.allSatisfy(\.isASCII)
        else { return nil }
        return Int(text)
    }

    // MARK: Negotiation

    /// The headers of our INVITE or re-INVITE: Supported, Session-Expires (on a re-INVITE, the running interval and
    /// who refreshes; on the initial INVITE, `interval` with no refresher, as RFC 4028 §7.1 recommends, for the
    /// answerer to choose) and Min-SE.
    static func requestHeaders(
        _ configuration: SessionTimerConfiguration, running: SessionTimer?, interval: Int? = nil
    ) -> SIPHeaders {
        let expires = running.map { $0.headerValue(weSentRequest: true) } ?? String(interval ?? configuration.interval)
        let minimum = max(configuration.minimum, interval ?? configuration.minimum)
        return ["Supported": "timer", "Session-Expires": expires, "Min-SE": String(minimum)]
    }

    /// How we, answering an INVITE or re-INVITE, take its session timer request.
    enum Answer: Equatable {
        /// Its Session-Expires is below our Min-SE: 422 with this Min-SE (RFC 4028 §9).
        case tooSmall(minimum: Int)
        /// Accepted: the session runs this timer, and our 2xx carries these headers.
        case accept(SessionTimer, headers: SIPHeaders)
    }

    /// RFC 4028 §9: the interval is the request's (reduced to ours when longer, never below either side's Min-SE) or,
    /// when it asked for none, ours; the refresher is the request's choice when it made one and supports timers; a
    /// peer that does not support them is never made the refresher; when the choice is ours, we refresh (a peer that
    /// said nothing is not relied on).
    static func answer(_ request: SIPRequest, _ configuration: SessionTimerConfiguration) -> Answer {
        let headers = request.headers
        let supports = lists(headers, "Supported", option: "timer") || lists(headers, "Require", option: "timer")
        let asked = headers["Session-Expires"].flatMap(Expires.init)
        // Too short: 422 to a peer that supports timers; one that does not (a proxy added the header) gets our floor.
        if let asked, asked.seconds < configuration.minimum, supports { return .tooSmall(minimum: configuration.minimum) }
        let floor = max(configuration.minimum, minimum(in: headers) ?? 0)
        let interval = max(floor, min(asked?.seconds ?? configuration.interval, configuration.interval))
        let peerRefreshes = supports && asked?.refresher == .uac
        let timer = SessionTimer(interval: interval, weRefresh: !peerRefreshes)
        var answer: SIPHeaders = ["Session-Expires": timer.headerValue(weSentRequest: false)]
        // RFC 4028 §9: a 2xx that makes the UAC the refresher requires the extension of it.
        if peerRefreshes { answer.append("Require", "timer") }
        return .accept(timer, headers: answer)
    }

    /// RFC 4028 §7.2: the session timer of our INVITE or re-INVITE's 2xx — the answer's interval and refresher, or,
    /// when the peer answered without Session-Expires (it does not do timers), ours with us refreshing.
    static func answered(_ response: SIPResponse, requested: Int) -> SessionTimer {
        guard let expires = response.headers["Session-Expires"].flatMap(Expires.init) else {
            return SessionTimer(interval: requested, weRefresh: true)
        }
        return SessionTimer(interval: expires.seconds, weRefresh: expires.refresher != .uas)
    }

    /// RFC 4028 §7.3: the interval to ask for again after a 422 to an INVITE that asked for `requested`: the 422's
    /// Min-SE when it is larger (and at most a day); nil when the 422 gives no way forward.
    static func retryInterval(after response: SIPResponse, requested: Int) -> Int? {
        guard response.statusCode == 422, let minimum = minimum(in: response.headers), minimum > requested,
            minimum <= 86_400
        else { return nil }
        return minimum
    }
}
