import Foundation
import SIPMessages

/// What a message is matched to a transaction by (RFC 3261 §17.1.3 for responses, §17.2.3 for requests).
///
/// A driver keeps its transactions in dictionaries keyed by this value: client transactions under
/// `TransactionKey(clientRequest:)`, found again with `TransactionKey(response:)`; server transactions under
/// `TransactionKey(serverRequest:)` of the request that created them, found again with the same initialiser for
/// retransmissions and for the ACK of a non-2xx final response (ACK maps to INVITE). CANCEL keys stay separate: a
/// CANCEL has its own transaction, and `cancelledInvite` names the INVITE transaction it targets.
public struct TransactionKey: Sendable, Hashable, CustomStringConvertible {
    /// What the key is made of: which matching rule, and its fields.
    public enum Kind: Sendable, Hashable {
        /// A client transaction: the branch of the top Via and the CSeq method (§17.1.3).
        case client(branch: String, method: SIPMethod)
        /// A server transaction for a request whose branch carries the RFC 3261 magic cookie: branch, sent-by of the
        /// top Via, and method, with ACK counted as INVITE (§17.2.3).
        case server(branch: String, sentBy: String, method: SIPMethod)
        /// A server transaction for a request without the magic cookie (RFC 2543 peers; §17.2.3).
        case rfc2543(RFC2543Key)
    }

    /// The matching rule and its fields.
    public var kind: Kind { storage.kind }
    /// The fields, behind one reference: a table's probe copies the key it compares, and a reference is one retain
    /// where the enum's strings were several.
    private let storage: Storage
    /// The hash of what tells transactions apart in practice (the branch; the Call-ID and CSeq number for RFC 2543
    /// keys), computed once: every message a driver receives looks its key up several times, and a table keyed by
    /// it then hashes one integer instead of a string. Equal keys have equal parts, so equal hashes.
    @usableFromInline let hashCode: Int

    /// A key of `kind`.
    public init(_ kind: Kind) {
        storage = Storage(kind)
        var hasher = Hasher()
        switch kind {
        case .client(let branch, _), .server(let branch, _, _):
            hasher.combine(branch)
        case .rfc2543(let key):
            hasher.combine(key.callID)
            hasher.combine(key.cseqNumber)
        }
        hashCode = hasher.finalize()
    }

    /// A client transaction's key (§17.1.3).
    public static func client(branch: String, method: SIPMethod) -> TransactionKey {
        TransactionKey(.client(branch: branch, method: method))
    }

    /// A server transaction's key, RFC 3261 style (§17.2.3).
    public static func server(branch: String, sentBy: String, method: SIPMethod) -> TransactionKey {
        TransactionKey(.server(branch: branch, sentBy: sentBy, method: method))
    }

    /// A server transaction's key, RFC 2543 style (§17.2.3).
    public static func rfc2543(_ fields: RFC2543Key) -> TransactionKey { TransactionKey(.rfc2543(fields)) }

    /// Keys differing in their hash differ (checked first: a table's probe rejects other keys without comparing
    /// strings); equal hashes compare every field. Inlinable, so that a table's probe compares the inline hashes
    /// without retaining the other key's box: a missed lookup in a 300,000-key table passes several keys, and the
    /// retain touched each one's cold box.
    @inlinable
    public static func == (left: TransactionKey, right: TransactionKey) -> Bool {
        left.hashCode == right.hashCode && haveSameFields(left, right)
    }

    /// Whether two keys with equal hashes have equal fields (the same box, or equal kinds).
    @usableFromInline
    static func haveSameFields(_ left: TransactionKey, _ right: TransactionKey) -> Bool {
        left.storage === right.storage || left.kind == right.kind
    }

    private final class Storage: Sendable {
        let kind: Kind
        init(_ kind: Kind) { self.kind = kind }
    }

    /// The hash computed once.
    @inlinable
    public func hash(into hasher: inout Hasher) {
        hasher.combine(hashCode)
    }

    /// The kind and its fields (the hash and the box are not worth printing).
    public var description: String { "\(kind)" }

    /// The fields RFC 2543 transactions are matched by (RFC 3261 §17.2.3).
    ///
    /// The To tag is kept only for methods other than INVITE and ACK. For those two the RFC compares the INVITE's
    /// To tag with the INVITE's and the ACK's with the tag of the response the transaction sent; leaving it out lets
    /// one hashable key match both, and loses nothing: retransmitted INVITEs repeat every other field, and the ACK
    /// for a 2xx (whose tag the dialog chose) comes after the INVITE transaction has ended.
    public struct RFC2543Key: Sendable, Hashable {
        /// The Request-URI.
        public var requestURI: SIPURI
        /// The To tag (nil for INVITE and ACK, see above, and when absent).
        public var toTag: String?
        /// The From tag.
        public var fromTag: String?
        /// The Call-ID.
        public var callID: String
        /// The CSeq number.
        public var cseqNumber: UInt32
        /// The CSeq method, ACK counted as INVITE.
        public var method: SIPMethod
        /// The top Via value as written (transport, sent-by and parameters).
        public var topVia: String
    }

    /// The key of a client transaction sending `request`; nil when it has no top Via with a branch.
    public init?(clientRequest request: SIPRequest) {
        guard let branch = request.headers.topVia?.branch else { return nil }
        self = .client(branch: branch, method: request.method)
    }

    /// The key of the client transaction a response belongs to; nil without a top Via branch or a CSeq.
    public init?(response: SIPResponse) {
        guard let branch = response.headers.topVia?.branch, let cseq = response.headers.cseq else { return nil }
        self = .client(branch: branch, method: cseq.method)
    }

    /// The key of the server transaction a received request belongs to (or creates); nil when the request lacks the
    /// header fields matching needs (a parsed request never does).
    public init?(serverRequest request: SIPRequest) {
        guard let via = request.headers.topVia else { return nil }
        let method: SIPMethod = request.method == .ack ? .invite : request.method
        if via.hasRFC3261Branch, let branch = via.branch {
            self = .server(branch: branch, sentBy: Self.sentBy(via), method: method)
            return
        }
        let headers = request.headers
        guard let callID = headers.callID, let cseq = headers.cseq, let from = headers.from, let to = headers.to,
            let topVia = headers["Via"].map(Self.firstValue)
        else { return nil }
        self = .rfc2543(RFC2543Key(
            requestURI: request.uri, toTag: method == .invite ? nil : to.tag, fromTag: from.tag, callID: callID,
            cseqNumber: cseq.number, method: method, topVia: topVia))
    }

    /// For the key of a CANCEL server transaction: the key of the INVITE server transaction it cancels (RFC 3261
    /// §9.2: same branch and sent-by, or the same RFC 2543 fields but the method). Nil for other keys.
    public var cancelledInvite: TransactionKey? {
        switch kind {
        case .server(let branch, let sentBy, let method):
            return method == .cancel ? .server(branch: branch, sentBy: sentBy, method: .invite) : nil
        case .rfc2543(var key):
            guard key.method == .cancel else { return nil }
            key.method = .invite
            key.toTag = nil
            return .rfc2543(key)
        case .client:
            return nil
        }
    }

    /// `host:port` of a Via, host lowercased, the port defaulted by transport (5061 for TLS, else 5060).
    private static func sentBy(_ via: SIPVia) -> String {
        let port = via.port ?? (via.transport == "TLS" ? 5061 : 5060)
        return "\(via.host.lowercased()):\(port)"
    }

    /// The first comma-separated value of a Via field, trimmed (good enough: Via values hold no quoted commas in
    /// the parts RFC 2543 peers send).
    private static func firstValue(_ field: String) -> String {
        String(field.split(separator: ",", maxSplits: 1).first ?? Substring(field))
            .trimmingCharacters(in: .whitespaces)
    }
}
