import ConversationKit
import Foundation

/// Version 1 of the control protocol between frontends and parleyd: one JSON object per message, every message a
/// Codable value of this module.
///
/// - Request: `{"v": 1, "id": 7, "method": "start", "params": {"to": "sip:bob@127.0.0.1:5062"}}` (``ControlRequest``).
/// - Response: `{"v": 1, "id": 7, "result": {…}}` or `{"v": 1, "id": 7, "error": {…}}` (``ControlResponse``).
/// - Event (after `subscribe`): `{"v": 1, "event": "conversationChanged", "data": {…}}` (``ControlEventMessage``).
public enum ControlProtocol {
    /// The protocol version this code speaks.
    public static let version = 1
    /// The longest string id a request may carry, in UTF-8 bytes.
    public static let maxIDBytes = 128
}

/// A request's id as the client wrote it (a number or a string), echoed in the response.
public enum ControlRequestID: Sendable, Hashable, Codable, CustomStringConvertible {
    /// A numeric id.
    case number(Int)
    /// A string id (1–128 UTF-8 bytes).
    case string(String)

    /// Reads an integer or a short non-empty string; anything else is a decoding error.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if let number = try? container.decode(Int.self) {
            self = .number(number)
        } else if let string = try? container.decode(String.self), !string.isEmpty,
            string.utf8.count <= ControlProtocol.maxIDBytes
        {
            self = .string(string)
        } else {
            throw DecodingError.dataCorruptedError(in: container, debugDescription: "not an id")
        }
    }

    /// Writes the number or the string.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .number(let number): try container.encode(number)
        case .string(let string): try container.encode(string)
        }
    }

    /// For logs.
    public var description: String {
        switch self {
        case .number(let number): String(number)
        case .string(let string): string.debugDescription
        }
    }
}

/// A parsed request: its id and the typed command.
public struct ControlRequest: Sendable, Equatable {
    /// The id to answer with.
    public let id: ControlRequestID
    /// What is asked.
    public let command: ControlCommand

    /// A request.
    public init(id: ControlRequestID, command: ControlCommand) {
        self.id = id
        self.command = command
    }

    /// The request as one line of JSON (for clients).
    public func encoded() -> Data {
        ControlJSON.encode(RequestEnvelope(v: ControlProtocol.version, id: id, method: command.method.rawValue, params: command))
    }

    /// Parses one message. A message that is not a usable request throws a ``ControlFailure`` carrying the request
    /// id when one could be read, so that the error can still be answered. Unknown members are ignored (a newer
    /// client may send more); a missing or mistyped parameter is `invalidParams` naming it.
    public static func parse(_ data: Data) throws(ControlFailure) -> ControlRequest {
        let envelope: LooseEnvelope
        do {
            envelope = try ControlJSON.decoder.decode(LooseEnvelope.self, from: data)
        } catch {
            if let problem = JSONSyntax.problem(in: data) {
                throw ControlFailure(id: nil, error: ControlError(.parseError, "Not valid JSON (\(problem)).", field: nil))
            }
            throw ControlFailure(id: nil, error: ControlError(.invalidRequest, "A request is a JSON object."))
        }
        guard let id = envelope.id?.value else {
            throw ControlFailure(
                id: nil,
                error: ControlError(
                    .invalidRequest, "A request needs an \"id\": an integer or a string of 1–128 bytes.", field: "id"))
        }
        guard envelope.v == ControlProtocol.version else {
            throw ControlFailure(
                id: id,
                error: ControlError(
                    .unsupportedVersion, "This parleyd speaks control protocol version \(ControlProtocol.version).",
                    field: "v"))
        }
        guard let name = envelope.method else {
            throw ControlFailure(id: id, error: ControlError(.invalidRequest, "A request needs a \"method\".", field: "method"))
        }
        guard let method = ControlMethodName(rawValue: name) else {
            throw ControlFailure(
                id: id,
                error: ControlError(
                    .unknownMethod, "There is no method \(name.debugDescription).",
                    details: ControlError.Details(methods: ControlMethodName.allCases.map(\.rawValue))))
        }
        guard envelope.paramsIsObjectOrAbsent else {
            throw ControlFailure(id: id, error: ControlError(.invalidParams, "\"params\" must be an object.", field: "params"))
        }
        do {
            return ControlRequest(id: id, command: try ControlCommand.decode(method, from: data))
        } catch {
            throw ControlFailure(id: id, error: error)
        }
    }
}

/// A request that cannot be served, with the id to answer it under (nil when none could be read).
public struct ControlFailure: Error, Sendable {
    /// The request's id, if readable.
    public let id: ControlRequestID?
    /// What is wrong.
    public let error: ControlError
}

/// An answer to one request: a result or an error, with the request's id (null when it could not be read).
public enum ControlResponse<Result: Codable & Sendable>: Sendable {
    /// The method's result.
    case result(Result)
    /// Why it failed.
    case error(ControlError)
}

/// Writing and reading whole messages.
public enum ControlMessage {
    /// `{"v":1,"id":…,"result":…}`.
    public static func result<Result: ControlShape>(_ result: Result, id: ControlRequestID) -> Data {
        if let fast = result as? any ControlFastJSON { return JSONOut.envelope(id: id, event: nil, payloadKey: "result", fast) }
        return ControlJSON.encode(ResultEnvelope(v: ControlProtocol.version, id: id, result: result))
    }

    /// `{"v":1,"id":…,"error":{…}}` (`"id": null` when the request's id could not be read).
    public static func error(_ error: ControlError, id: ControlRequestID?) -> Data {
        ControlJSON.encode(ErrorEnvelope(v: ControlProtocol.version, id: id, error: error))
    }

    /// Reads a response to a request whose result is a `Result`.
    public static func response<Result: Codable & Sendable>(
        _ data: Data, as type: Result.Type
    ) throws -> (id: ControlRequestID?, response: ControlResponse<Result>) {
        let envelope = try ControlJSON.decoder.decode(ReplyEnvelope<Result>.self, from: data)
        if let error = envelope.error { return (envelope.id, .error(error)) }
        guard let result = envelope.result else {
            throw DecodingError.dataCorrupted(.init(codingPath: [], debugDescription: "neither a result nor an error"))
        }
        return (envelope.id, .result(result))
    }

    /// What kind of message a line is, read cheaply: the id of a response, the name of an event, or neither.
    public static func kind(of data: Data) -> (id: ControlRequestID?, event: String?) {
        guard let peek = try? ControlJSON.decoder.decode(Peek.self, from: data) else { return (nil, nil) }
        return (peek.id, peek.event)
    }

    private struct Peek: Decodable {
        var id: ControlRequestID?
        var event: String?
        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: Keys.self)
            id = try? container.decodeIfPresent(ControlRequestID.self, forKey: .id)
            event = try? container.decodeIfPresent(String.self, forKey: .event)
        }
        enum Keys: String, CodingKey { case id, event }
    }
}

struct RequestEnvelope: Encodable {
    let v: Int
    let id: ControlRequestID
    let method: String
    let params: ControlCommand
}

struct ResultEnvelope<Result: Encodable>: Encodable {
    let v: Int
    let id: ControlRequestID
    let result: Result
}

struct ErrorEnvelope: Encodable {
    let v: Int
    @Nullable var id: ControlRequestID?
    let error: ControlError
}

struct ReplyEnvelope<Result: Codable>: Decodable {
    var id: ControlRequestID?
    var result: Result?
    var error: ControlError?
}

/// The members every request has, read leniently so that each fault gets its own error.
struct LooseEnvelope: Decodable {
    /// An id member that may be unusable.
    struct LooseID: Decodable {
        let value: ControlRequestID?
        init(from decoder: any Decoder) throws { value = try? ControlRequestID(from: decoder) }
    }
    var v: Int?
    var id: LooseID?
    var method: String?
    var paramsIsObjectOrAbsent = true

    enum Keys: String, CodingKey { case v, id, method, params }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: Keys.self)
        v = try? container.decodeIfPresent(Int.self, forKey: .v)
        id = try container.decodeIfPresent(LooseID.self, forKey: .id)
        method = try? container.decodeIfPresent(String.self, forKey: .method)
        if container.contains(.params), !((try? container.decodeNil(forKey: .params)) ?? false) {
            paramsIsObjectOrAbsent = (try? container.nestedContainer(keyedBy: AnyKey.self, forKey: .params)) != nil
        }
    }
}

/// Any member name.
struct AnyKey: CodingKey {
    let stringValue: String
    init(stringValue: String) { self.stringValue = stringValue }
    var intValue: Int? { nil }
    init?(intValue: Int) { nil }
}

/// The one encoder and decoder of the protocol: keys sorted (stable output), slashes unescaped.
enum ControlJSON {
    /// A fresh decoder (cheap; JSONDecoder keeps options, not state).
    static var decoder: JSONDecoder { JSONDecoder() }

    static func encode<Value: Encodable>(_ value: Value) -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        do {
            return try encoder.encode(value)
        } catch {
            preconditionFailure("a control message could not be encoded: \(error)")
        }
    }
}

/// An optional member written as `null` when absent (the protocol never omits a documented member), read as nil
/// when null or missing.
@propertyWrapper
public struct Nullable<Value: Codable & Sendable & Equatable>: Codable, Sendable, Equatable {
    /// The value, or nil for `null`.
    public var wrappedValue: Value?

    /// Wraps `wrappedValue`.
    public init(wrappedValue: Value?) { self.wrappedValue = wrappedValue }

    /// Reads `null` as nil.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        wrappedValue = container.decodeNil() ? nil : try container.decode(Value.self)
    }

    /// Writes nil as `null`.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        if let wrappedValue { try container.encode(wrappedValue) } else { try container.encodeNil() }
    }
}

extension KeyedDecodingContainer {
    /// A missing member is nil, like a `null` one.
    public func decode<Value>(_ type: Nullable<Value>.Type, forKey key: Key) throws -> Nullable<Value> {
        try decodeIfPresent(type, forKey: key) ?? Nullable(wrappedValue: nil)
    }
}
