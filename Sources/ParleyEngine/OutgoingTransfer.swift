import Foundation
import SIPMessages

/// A blind transfer we asked for (RFC 3515): our REFER in the call's dialog, the peer's answer, then its NOTIFYs
/// carrying the new call's progress as a `message/sipfrag` status line. The Transfer action is settled by the final
/// NOTIFY, never by the 202 (a 202 only says the peer will try). A NOTIFY may overtake the 202 (they are separate
/// transactions), so one is taken in either stage.
///
/// ```
///   transfer ─► REFER ─► referring ──2xx──► accepted ──NOTIFY 1xx──► (stays; progress logged)
///                           │                  │
///                           │                  ├──NOTIFY 2xx──► done: action fulfilled, BYE (transferred)
///                           │                  ├──NOTIFY 3xx–6xx──► done: action failed, the call goes on
///                           │                  └──no final NOTIFY for `finalWait`──► done: action failed
///                           └──3xx–6xx, no answer, transport error──► done: action failed, the call goes on
/// ```
struct OutgoingTransfer {
    /// Where the transfer is.
    enum Stage: Equatable {
        /// Our REFER is out, unanswered.
        case referring
        /// The peer took it (2xx): we wait for the final NOTIFY.
        case accepted
    }

    /// The Transfer action, settled once.
    let action: ActionRef
    /// Whom the peer is asked to call (the Refer-To).
    let target: SIPURI
    var stage = Stage.referring

    /// How long the final NOTIFY may take after the REFER was accepted: the target may ring a while.
    static let finalWait: Duration = .seconds(90)

    /// What a status line in a NOTIFY means for the transfer.
    enum Progress: Equatable {
        /// Still trying (1xx): nothing to settle.
        case trying(String)
        /// The target answered (2xx).
        case succeeded(String)
        /// The target refused or could not be reached (3xx–6xx).
        case failed(String)
    }

    /// The progress a sipfrag status line reports.
    static func progress(_ line: SIPFragmentStatus) -> Progress {
        let said = "\(line.code) \(line.reason)".trimmingCharacters(in: .whitespaces)
        switch line.code {
        case 100..<200: return .trying(said)
        case 200..<300: return .succeeded(said)
        default: return .failed(said)
        }
    }
}

/// The status line of a `message/sipfrag` body (RFC 3420) as a REFER's NOTIFY carries it (RFC 3515 §2.4.5): `SIP/2.0
/// 200 OK`, with or without the CRLF that should end it (peers leave it out), headers after it ignored.
struct SIPFragmentStatus: Equatable {
    /// The status code, 100–699.
    let code: Int
    /// The reason phrase (may be empty).
    let reason: String

    /// The longest sipfrag body read: a status line and a few headers.
    static let maxBytes = 4_096

    /// The status line at the start of `body`; nil when it is none (a request line, garbage, a code out of range,
    /// a body too long).
    init?(body: Data) {
        // The line ends at the first CR or LF byte (as a Swift Character "\r\n" is one, matching neither).
        guard !body.isEmpty, body.count <= Self.maxBytes,
            let line = String(data: body.prefix { $0 != 0x0D && $0 != 0x0A }, encoding: .utf8)
        else { return nil }
        let parts = line.split(separator: " ", maxSplits: 2, omittingEmptySubsequences: false)
        guard parts.count >= 2, parts[0].uppercased() == "SIP/2.0", parts[1].count == 3, parts[1].allSatisfy({ $0.isASCII && $0.isNumber }),
            let code = Int(parts[1]), (100...699).contains(code)
        else { return nil }
        self.code = code
        self.reason = parts.count > 2 ? String(parts[2]).trimmingCharacters(in: .whitespaces) : ""
    }
}
