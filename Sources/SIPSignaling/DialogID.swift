import SIPMessages

/// What identifies a dialog (RFC 3261 §12): the Call-ID, the tag this side chose and the tag the peer chose.
///
/// A driver keeps its dialogs in a dictionary keyed by this value: it finds the dialog of a received request with
/// `DialogID(incomingRequest:)` and the dialog of a response to a request it sent with `DialogID(responseAsUAC:)`.
/// Tags and the Call-ID compare byte for byte.
public struct DialogID: Sendable, Hashable {
    /// The Call-ID.
    public var callID: String
    /// The tag this side chose: the To tag of our answers as callee, the From tag of our requests as caller.
    public var localTag: String
    /// The tag the peer chose; nil only for an RFC 2543 peer that sends none (RFC 3261 §12.1.1, §12.1.2 allow it).
    public var remoteTag: String?

    /// An identifier made of these parts.
    public init(callID: String, localTag: String, remoteTag: String?) {
        self.callID = callID
        self.localTag = localTag
        self.remoteTag = remoteTag
    }

    /// The dialog a received request belongs to, as its UAS (RFC 3261 §12.2.2): the local tag is the To tag, the
    /// remote tag the From tag. Nil when To has no tag (the request is outside any dialog) or Call-ID is missing.
    public init?(incomingRequest request: SIPRequest) {
        let headers = request.headers
        guard let callID = headers.callID, let localTag = headers.toTag else { return nil }
        self.init(callID: callID, localTag: localTag, remoteTag: headers.fromTag)
    }

    /// The dialog a received response belongs to, as the UAC of its request (RFC 3261 §12.1.2, §12.2.1.2): the local
    /// tag is the From tag, the remote tag the To tag (nil when To has none). Nil when From has no tag (Parley always
    /// sends one) or Call-ID is missing.
    public init?(responseAsUAC response: SIPResponse) {
        let headers = response.headers
        guard let callID = headers.callID, let localTag = headers.fromTag else { return nil }
        self.init(callID: callID, localTag: localTag, remoteTag: headers.toTag)
    }
}
