import Foundation

/// One event a SIP proxy emits for a call to a push binding (RFC 8599), as the example Kamailio configuration
/// (Examples/kamailio/kamailio.cfg) relays it over evapi: a JSON object naming the call and how to wake the
/// callee's device. `push`: an INVITE is held for the device; `cancel`: the caller gave up or the hold ended.
///
/// ```json
/// {"event":"push","aor":"sip:alice@127.0.0.1","callId":"8f2a@127.0.0.1","from":"sip:bob@127.0.0.1:5072",
///  "fromName":"Bob","provider":"parley-sim","prid":"tok-alice","param":"127.0.0.1.7000"}
/// ```
public struct ProxyPushEvent: Sendable, Hashable {
    /// What the proxy asks for.
    public enum Kind: String, Sendable, Hashable, CaseIterable {
        /// Wake the device: an INVITE waits for it.
        case push
        /// Withdraw the push: the caller cancelled, or the proxy stopped holding the INVITE.
        case cancel
    }

    /// What the proxy asks for.
    public var kind: Kind
    /// The callee's address of record.
    public var addressOfRecord: String
    /// The held INVITE's Call-ID: the woken device joins that INVITE to the pushed conversation by it.
    public var callID: String
    /// The caller's URI (the INVITE's From).
    public var caller: String
    /// The caller's display name, nil when the From had none.
    public var callerName: String?
    /// RFC 8599 pn-provider: the push service that knows the device.
    public var provider: String
    /// RFC 8599 pn-prid: the device's token at that service.
    public var token: String
    /// RFC 8599 pn-param, as the device registered it (nil when absent).
    public var parameter: String?

    /// An event.
    public init(
        kind: Kind, addressOfRecord: String, callID: String, caller: String, callerName: String? = nil,
        provider: String, token: String, parameter: String? = nil
    ) {
        self.kind = kind
        self.addressOfRecord = addressOfRecord
        self.callID = callID
        self.caller = caller
        self.callerName = callerName
        self.provider = provider
        self.token = token
        self.parameter = parameter
    }

    /// The longest value of any field, in bytes.
    public static let maximumFieldLength = 1024

    /// Parses one event's JSON. Every fault of the proxy's (or of whoever else wrote to the socket) is a
    /// ``ProxyPushEventError`` naming the field at fault.
    public static func parse(_ data: Data) throws(ProxyPushEventError) -> ProxyPushEvent {
        let object: Any
        do {
            object = try JSONSerialization.jsonObject(with: data, options: [])
        } catch {
            throw .notJSON(String(decoding: data.prefix(64), as: UTF8.self))
        }
        guard let fields = object as? [String: Any] else { throw .notAnObject }
        func text(_ name: String, required: Bool = true) throws(ProxyPushEventError) -> String? {
            guard let value = fields[name], !(value is NSNull) else {
                if required { throw .missingField(name) }
                return nil
            }
            guard let string = value as? String else { throw .notAString(name) }
            guard string.utf8.count <= maximumFieldLength else { throw .tooLong(name) }
            guard !string.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) else {
                throw .controlCharacters(name)
            }
            if string.isEmpty {
                if required { throw .emptyField(name) }
                return nil
            }
            return string
        }
        let name = try text("event")!
        guard let kind = Kind(rawValue: name) else { throw .unknownEvent(name) }
        let event = ProxyPushEvent(
            kind: kind, addressOfRecord: try text("aor")!, callID: try text("callId")!, caller: try text("from")!,
            callerName: try text("fromName", required: false), provider: try text("provider")!,
            token: try text("prid")!, parameter: try text("param", required: false))
        if let problem = PushService.tokenProblem(event.token) { throw .badToken(problem) }
        return event
    }
}

/// Why an event from the proxy cannot be used. The connection stays up: the next event may be fine.
public enum ProxyPushEventError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The payload is not JSON (its first bytes).
    case notJSON(String)
    /// The JSON is not an object.
    case notAnObject
    /// A required field is absent (or null).
    case missingField(String)
    /// A required field is an empty string (the binding had no such pn-* parameter, for instance).
    case emptyField(String)
    /// A field is not a string.
    case notAString(String)
    /// A field is longer than ``ProxyPushEvent/maximumFieldLength``.
    case tooLong(String)
    /// A field holds control characters.
    case controlCharacters(String)
    /// `event` is neither `push` nor `cancel`.
    case unknownEvent(String)
    /// `prid` is not a token the push service would accept.
    case badToken(String)

    /// For logs.
    public var description: String {
        switch self {
        case .notJSON(let start): "not JSON: \(start.debugDescription)"
        case .notAnObject: "the JSON is not an object"
        case .missingField(let name): "the field \"\(name)\" is missing"
        case .emptyField(let name): "the field \"\(name)\" is empty"
        case .notAString(let name): "the field \"\(name)\" is not a string"
        case .tooLong(let name): "the field \"\(name)\" is longer than \(ProxyPushEvent.maximumFieldLength) bytes"
        case .controlCharacters(let name): "the field \"\(name)\" holds control characters"
        case .unknownEvent(let name): "unknown event \(name.debugDescription) (expected push or cancel)"
        case .badToken(let problem): "prid: \(problem)"
        }
    }
}
