import ConversationKit
import Foundation

/// Every message of the push channel. On the wire each is one JSON object with `"v": 1`, a `"type"` naming
/// the case, and the case's members beside them: `{"v": 1, "type": "ack", "id": "p1", "reported": true}`.
///
/// | type | from → to | members |
/// |------|-----------|---------|
/// | `register` | device → simulator | `token` |
/// | `registered` | simulator → device | `token, strikes, disabled` |
/// | `push` | simulator → device | `id, token, payload, collapseID?` |
/// | `ack` | device → simulator | `id, reported, reason?` |
/// | `send` | sender → simulator | `token, payload, collapseID?, expiration?` |
/// | `outcome` | simulator → sender | `token, pushID?, result, reported?, detail` |
/// | `status` | anyone → simulator | (none) |
/// | `statusReport` | simulator → requester | `devices, counters` |
/// | `error` | either way | `code, message, path?` |
public enum PushMessage: Sendable, Hashable {
    /// A device announces the token it receives pushes for.
    case register(token: String)
    /// The simulator confirms a registration.
    case registered(PushRegistration)
    /// The simulator hands a device a push.
    case push(PushDelivery)
    /// The device answers push `pushID`.
    case ack(pushID: String, PushAck)
    /// A sender asks for a push.
    case send(PushSendRequest)
    /// The simulator tells a sender what became of its push.
    case outcome(PushOutcome)
    /// Anyone asks for the simulator's state.
    case status
    /// The simulator's state.
    case statusReport(PushStatusReport)
    /// A peer fault, reported to the peer that made it.
    case error(PushFault)

    /// The message types, by their `type` names.
    public enum Kind: String, Sendable, Hashable, CaseIterable {
        /// `register`.
        case register
        /// `registered`.
        case registered
        /// `push`.
        case push
        /// `ack`.
        case ack
        /// `send`.
        case send
        /// `outcome`.
        case outcome
        /// `status`.
        case status
        /// `statusReport`.
        case statusReport
        /// `error`.
        case error
    }

    /// This message's type.
    public var kind: Kind {
        switch self {
        case .register: .register
        case .registered: .registered
        case .push: .push
        case .ack: .ack
        case .send: .send
        case .outcome: .outcome
        case .status: .status
        case .statusReport: .statusReport
        case .error: .error
        }
    }
}

extension PushMessage: Codable {
    private enum EnvelopeKeys: String, CodingKey { case v, type }
    private enum RegisterKeys: String, CodingKey { case token }
    private enum AckKeys: String, CodingKey { case id }

    /// Decodes a message. Throws ``PushFault`` (`badField`, `unsupportedVersion`, `unknownType`) for envelope
    /// problems and `DecodingError` for the members; ``PushCodec/decode(_:)`` turns both into a ``PushFault``.
    public init(from decoder: any Decoder) throws {
        let envelope = try decoder.container(keyedBy: EnvelopeKeys.self)
        guard envelope.contains(.v) else {
            throw PushFault(code: .badField, message: "v: missing (every message carries \"v\": \(PushCodec.version))", path: "v")
        }
        let version: Int
        do {
            version = try envelope.decode(Int.self, forKey: .v)
        } catch {
            throw PushFault(code: .unsupportedVersion, message: "v must be the number \(PushCodec.version), the only version supported")
        }
        guard version == PushCodec.version else {
            throw PushFault(
                code: .unsupportedVersion, message: "version \(version) is not supported (supported: \(PushCodec.version))")
        }
        let typeName = try envelope.decode(String.self, forKey: .type)
        guard let kind = Kind(rawValue: typeName) else {
            let known = Kind.allCases.map(\.rawValue).joined(separator: ", ")
            throw PushFault(code: .unknownType, message: "unknown message type '\(typeName.clipped())' (known: \(known))")
        }
        switch kind {
        case .register:
            self = .register(token: try decoder.container(keyedBy: RegisterKeys.self).decode(String.self, forKey: .token))
        case .registered: self = .registered(try PushRegistration(from: decoder))
        case .push: self = .push(try PushDelivery(from: decoder))
        case .ack:
            let id = try decoder.container(keyedBy: AckKeys.self).decode(String.self, forKey: .id)
            self = .ack(pushID: id, try PushAck(from: decoder))
        case .send: self = .send(try PushSendRequest(from: decoder))
        case .outcome: self = .outcome(try PushOutcome(from: decoder))
        case .status: self = .status
        case .statusReport: self = .statusReport(try PushStatusReport(from: decoder))
        case .error: self = .error(try PushFault(from: decoder))
        }
    }

    /// Encodes `v`, `type` and the case's members into one object.
    public func encode(to encoder: any Encoder) throws {
        var envelope = encoder.container(keyedBy: EnvelopeKeys.self)
        try envelope.encode(PushCodec.version, forKey: .v)
        try envelope.encode(kind.rawValue, forKey: .type)
        switch self {
        case .register(let token):
            var container = encoder.container(keyedBy: RegisterKeys.self)
            try container.encode(token, forKey: .token)
        case .registered(let registration): try registration.encode(to: encoder)
        case .push(let delivery): try delivery.encode(to: encoder)
        case .ack(let pushID, let ack):
            var container = encoder.container(keyedBy: AckKeys.self)
            try container.encode(pushID, forKey: .id)
            try ack.encode(to: encoder)
        case .send(let request): try request.encode(to: encoder)
        case .outcome(let outcome): try outcome.encode(to: encoder)
        case .status: break
        case .statusReport(let report): try report.encode(to: encoder)
        case .error(let fault): try fault.encode(to: encoder)
        }
    }
}

/// Messages to and from JSON frame bodies.
public enum PushCodec {
    /// The protocol version this module speaks: every message carries `"v": 1`.
    public static let version = 1

    /// The JSON of `message`: one object, keys sorted. Every value encodes (dates are strings; a non-finite
    /// `expiration` becomes a string the simulator rejects), so a failure is a bug and traps.
    public static func encode(_ message: PushMessage) -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        // A sender's non-finite `expiration` goes out as a string, which the simulator rejects as a bad field.
        encoder.nonConformingFloatEncodingStrategy = .convertToString(positiveInfinity: "inf", negativeInfinity: "-inf", nan: "nan")
        do {
            return try encoder.encode(message)
        } catch {
            preconditionFailure("a push message failed to encode: \(error)")
        }
    }

    /// The message in a frame body; a ``PushFault`` naming what is wrong (and where) when there is none.
    public static func decode(_ body: Data) throws(PushFault) -> PushMessage {
        guard !body.isEmpty else { throw PushFault(code: .malformedJSON, message: "empty frame (expected a JSON object)") }
        do {
            return try JSONDecoder().decode(PushMessage.self, from: body)
        } catch let fault as PushFault {
            throw fault
        } catch let error as DecodingError {
            throw fault(for: error, in: body)
        } catch {
            throw PushFault(code: .malformedJSON, message: "\(error)")
        }
    }

    /// The fault for a decoding error: malformed JSON, a top level that is not an object, or a member at fault.
    private static func fault(for error: DecodingError, in body: Data) -> PushFault {
        switch error {
        case .dataCorrupted(let context) where context.codingPath.isEmpty:
            let problem = JSONSyntax.problem(in: body) ?? context.debugDescription
            return PushFault(code: .malformedJSON, message: "not JSON: \(problem)")
        case .typeMismatch(_, let context) where context.codingPath.isEmpty:
            return PushFault(code: .malformedJSON, message: "a frame must hold a JSON object")
        case .dataCorrupted(let context):
            return badField(context.codingPath, context.debugDescription)
        case .keyNotFound(let key, let context):
            return badField(context.codingPath + [key], "missing")
        case .valueNotFound(let type, let context):
            return badField(context.codingPath, "null where \(describe(type)) belongs")
        case .typeMismatch(let type, let context):
            return badField(context.codingPath, "expected \(describe(type))")
        @unknown default:
            return PushFault(code: .badField, message: "\(error)")
        }
    }

    private static func badField(_ path: [any CodingKey], _ problem: String) -> PushFault {
        let text = jsonPath(path)
        return PushFault(code: .badField, message: "\(text): \(problem)", path: text)
    }

    /// `payload.handle.kind`, `devices[2].token`.
    static func jsonPath(_ path: [any CodingKey]) -> String {
        var text = ""
        for key in path {
            if let index = key.intValue {
                text += "[\(index)]"
            } else {
                text += text.isEmpty ? key.stringValue : "." + key.stringValue
            }
        }
        return text.isEmpty ? "(top level)" : text
    }

    /// "a string", "a boolean"…
    private static func describe(_ type: Any.Type) -> String {
        switch type {
        case is String.Type: "a string"
        case is Bool.Type: "a boolean"
        case is Int.Type, is Int64.Type, is UInt32.Type: "an integer"
        case is Double.Type, is Float.Type: "a number"
        case is [Any].Type: "an array"
        default:
            String(describing: type).hasPrefix("Dictionary") || String(describing: type).contains("KeyedDecodingContainer")
                ? "an object" : "a value of type \(type)"
        }
    }
}
