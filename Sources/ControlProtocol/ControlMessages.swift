import Foundation

/// Version 1 of the control protocol between frontends and parleyd: one JSON object per message.
///
/// - Request: `{"v": 1, "id": 7, "method": "start", "params": {"to": "sip:bob@127.0.0.1:5062"}}` (`id` a number or
///   a string, echoed back; `params` optional).
/// - Response: `{"v": 1, "id": 7, "result": {…}}` or `{"v": 1, "id": 7, "error": {"code": "invalidParams",
///   "message": "…", "details": {…}}}`.
/// - Event (after `subscribe`): `{"v": 1, "event": "conversationChanged", "data": {…}}`.
public enum ControlProtocol {
    /// The protocol version this code speaks.
    public static let version = 1
}

/// A request's id as the client wrote it (a number or a string), echoed in the response.
public enum ControlRequestID: Sendable, Hashable, CustomStringConvertible {
    /// A numeric id.
    case number(Int)
    /// A string id.
    case string(String)

    /// The id as a JSON value.
    public var json: Any {
        switch self {
        case .number(let number): number
        case .string(let string): string
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

/// A parsed request.
// @unchecked Sendable: `params` holds only JSONSerialization's immutable Foundation values (NSString, NSNumber,
// NSArray, NSDictionary, NSNull), which are never mutated after parsing.
public struct ControlRequest: @unchecked Sendable {
    /// The id to answer with.
    public let id: ControlRequestID
    /// The method name.
    public let method: String
    /// The parameters (an empty object when absent).
    public let params: [String: Any]

    /// Parses one message; a message that is not a usable request throws a ``ControlError`` (with the request id
    /// when one could be read, so the error can still be answered).
    public static func parse(_ data: Data) throws(ControlFailure) -> ControlRequest {
        let object: Any
        do {
            object = try JSONSerialization.jsonObject(with: data, options: [.fragmentsAllowed])
        } catch {
            throw ControlFailure(id: nil, error: ControlError(.parseError, "not valid JSON: \(error.localizedDescription)"))
        }
        guard let message = object as? [String: Any] else {
            throw ControlFailure(id: nil, error: ControlError(.invalidRequest, "a request is a JSON object"))
        }
        let id: ControlRequestID?
        switch message["id"] {
        case let number as Int:
            id = .number(number)
        case let string as String where !string.isEmpty && string.utf8.count <= 128:
            id = .string(string)
        default:
            id = nil
        }
        guard let id else {
            throw ControlFailure(id: nil, error: ControlError(.invalidRequest, "\"id\" must be an integer or a short string"))
        }
        guard let version = message["v"] as? Int, version == ControlProtocol.version else {
            throw ControlFailure(
                id: id, error: ControlError(.unsupportedVersion, "this parleyd speaks version \(ControlProtocol.version) (\"v\": 1)"))
        }
        guard let method = message["method"] as? String else {
            throw ControlFailure(id: id, error: ControlError(.invalidRequest, "\"method\" must be a string"))
        }
        let params: [String: Any]
        switch message["params"] {
        case nil, is NSNull: params = [:]
        case let object as [String: Any]: params = object
        default:
            throw ControlFailure(id: id, error: ControlError(.invalidParams, "\"params\" must be an object"))
        }
        return ControlRequest(id: id, method: method, params: params)
    }
}

/// A request that cannot be served, with the id to answer it under (nil when none could be read).
public struct ControlFailure: Error, Sendable {
    /// The request's id, if readable.
    public let id: ControlRequestID?
    /// What is wrong.
    public let error: ControlError
}

/// A structured error: a stable code, a message for people, optional details.
// @unchecked Sendable: `details` holds only immutable JSON-compatible values (strings, numbers, arrays of them) built by
// the engine and never mutated.
public struct ControlError: Error, @unchecked Sendable, CustomStringConvertible {
    /// The stable codes clients can switch on.
    public enum Code: String, Sendable, CaseIterable {
        /// The message is not valid JSON.
        case parseError
        /// Valid JSON, but not a request (no id, no method, wrong shapes).
        case invalidRequest
        /// The `v` field is missing or not 1.
        case unsupportedVersion
        /// No such method.
        case unknownMethod
        /// A parameter is missing or has the wrong type or value.
        case invalidParams
        /// The conversation (or record) named does not exist or is ambiguous.
        case notFound
        /// The engine refused the action (its state or limits do not allow it).
        case refused
        /// The action ran and failed.
        case failed
        /// The action did not complete in time.
        case timedOut
    }

    /// The code.
    public let code: Code
    /// What happened, in words.
    public let message: String
    /// Extra structured information.
    public let details: [String: Any]?

    /// An error.
    public init(_ code: Code, _ message: String, details: [String: Any]? = nil) {
        self.code = code
        self.message = message
        self.details = details
    }

    /// `invalidParams: missing "to"`.
    public var description: String { "\(code.rawValue): \(message)" }

    /// The error object.
    public var json: [String: Any] {
        var object: [String: Any] = ["code": code.rawValue, "message": message]
        if let details { object["details"] = details }
        return object
    }
}

/// Writing messages.
public enum ControlEncoding {
    /// `{"v":1,"id":…,"result":…}`.
    public static func result(_ result: [String: Any], id: ControlRequestID) -> Data {
        encode(["v": ControlProtocol.version, "id": id.json, "result": result])
    }

    /// `{"v":1,"id":…,"error":{…}}` (`"id": null` when the request's id could not be read).
    public static func error(_ error: ControlError, id: ControlRequestID?) -> Data {
        encode(["v": ControlProtocol.version, "id": id?.json ?? NSNull(), "error": error.json])
    }

    /// `{"v":1,"event":…,"data":{…}}`.
    public static func event(_ name: String, data: [String: Any]) -> Data {
        encode(["v": ControlProtocol.version, "event": name, "data": data])
    }

    /// A request, for clients: `{"v":1,"id":…,"method":…,"params":{…}}`.
    public static func request(_ method: String, params: [String: Any] = [:], id: ControlRequestID) -> Data {
        encode(["v": ControlProtocol.version, "id": id.json, "method": method, "params": params])
    }

    /// One JSON object on one line (keys sorted, so output is stable).
    static func encode(_ object: [String: Any]) -> Data {
        guard let data = try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])
        else { preconditionFailure("the engine built a message JSONSerialization cannot write: \(object)") }
        return data
    }
}
