import Foundation

/// The sizes and times a ``ControlServer`` enforces.
public struct ControlLimits: Sendable, Hashable {
    /// The longest line (without its LF) a client may send: 64 KiB. A longer one gets a `frameTooLarge` error
    /// and the connection is closed.
    public var maxLineBytes: Int
    /// Bytes that may wait to be written to one client before it is closed as not reading: 1 MiB.
    public var maxQueuedBytes: Int
    /// Authenticated clients served at once (client slots): 64. A hello beyond them takes the slot of an evictable
    /// client (`evicted`) or gets `tooManyClients`. Connections still saying hello hold no slot.
    public var maxClients: Int
    /// Connections that have not said hello yet, at once: 32 — a browser's page load and its socket, and a few local
    /// tools, with room to spare; the hello deadline frees a place within 5 s. Beyond it (or beyond
    /// ``maxPendingPerSource``) a new connection is let in and an older pending one is set aside: the oldest that has
    /// sent nothing yet (else the oldest) of the source holding the most. A connection set aside is no longer read and
    /// is closed without a word at its hello deadline (at once when four times this many are set aside): closed at
    /// once, a flood that reopens whatever is closed would come straight back and churn.
    public var maxPendingConnections: Int
    /// Connections that have not said hello yet from one source address (IPv6 by its /64; every Unix-socket peer is one
    /// source), at once: 8 — a browser opens up to 6 connections to one host for a page's files, and then its
    /// WebSocket. Beyond it the source's oldest pending connection that has sent nothing yet (else its oldest) is set
    /// aside for the newcomer (see ``maxPendingConnections``), so idle connections cannot keep a client of the same
    /// address from saying hello.
    public var maxPendingPerSource: Int
    /// How long a new connection may take to send its hello: 5 s.
    public var helloTimeout: TimeInterval
    /// How long a connection being closed after an error may take to read that error: 1 s.
    public var lingerTime: TimeInterval
    /// How long an authenticated client that never subscribed must have sent nothing before a new client (with the
    /// right token) may take its slot when the server is full: 60 s, longer than an action may take to be answered.
    public var evictionIdleTime: TimeInterval
    /// The kernel send buffer for accepted connections; nil keeps the system's. Tests shrink it so that a client
    /// that does not read fills its outgoing queue quickly.
    public var socketSendBufferSize: Int?

    /// Limits; the defaults are those documented on each member.
    public init(
        maxLineBytes: Int = 64 * 1024, maxQueuedBytes: Int = 1024 * 1024, maxClients: Int = 64,
        helloTimeout: TimeInterval = 5, lingerTime: TimeInterval = 1, evictionIdleTime: TimeInterval = 60,
        socketSendBufferSize: Int? = nil, maxPendingConnections: Int = 32, maxPendingPerSource: Int = 8
    ) {
        precondition(
            maxLineBytes > 0 && maxQueuedBytes > 0 && maxClients > 0 && maxPendingConnections > 0 && maxPendingPerSource > 0,
            "control limits must be positive")
        self.maxLineBytes = maxLineBytes
        self.maxPendingConnections = maxPendingConnections
        self.maxPendingPerSource = maxPendingPerSource
        self.maxQueuedBytes = maxQueuedBytes
        self.maxClients = maxClients
        self.helloTimeout = helloTimeout
        self.lingerTime = lingerTime
        self.evictionIdleTime = evictionIdleTime
        self.socketSendBufferSize = socketSendBufferSize
    }
}

/// One connection to a ``ControlServer``, unique for the server's lifetime.
public struct ControlClientID: Hashable, Sendable, CustomStringConvertible {
    /// The connection's number, counting from 1 in the order of acceptance.
    public let rawValue: UInt64

    /// The identifier numbered `rawValue`.
    public init(_ rawValue: UInt64) { self.rawValue = rawValue }

    /// `control#N`.
    public var description: String { "control#\(rawValue)" }
}

/// The codes of the `error` lines the transport itself sends (the method layer has its own).
public enum ControlErrorCode: String, Sendable, Hashable, CaseIterable {
    /// The first line was not a hello with the right token, or did not come in time. The connection is closed.
    case unauthorized
    /// The hello asked for a protocol version this server does not speak (`v` is not 1). The connection is closed.
    case unsupportedVersion
    /// A line was longer than ``ControlLimits/maxLineBytes``. The connection is closed.
    case frameTooLarge
    /// A line was not valid UTF-8. The line is skipped; the connection stays.
    case invalidFrame
    /// The server already serves ``ControlLimits/maxClients`` authenticated clients and none can be evicted. The
    /// connection is closed.
    case tooManyClients
    /// An idle client that never subscribed was closed to make room for a new one.
    case evicted
}

/// The lines of the transport's own handshake and errors.
enum ControlWire {
    /// The protocol version in `v`.
    static let version = 1
    /// Longest hello accepted (a token is 64 characters; the rest is a few short members).
    static let maxHelloBytes = 4096

    /// `{"v":1,"type":"hello","token":"…"}`.
    static func hello(token: String) -> Data {
        Data("{\"v\":1,\"type\":\"hello\",\"token\":".utf8) + jsonString(token) + Data("}".utf8)
    }

    /// `{"v":1,"type":"welcome"}`.
    static let welcome = Data("{\"v\":1,\"type\":\"welcome\"}".utf8)

    /// `{"v":1,"type":"error","id":null,"error":{"code":"…","message":"…","details":null}}`: an error has its
    /// three members always, like every error of the protocol.
    static func error(_ code: ControlErrorCode, _ message: String) -> Data {
        Data("{\"v\":1,\"type\":\"error\",\"id\":null,\"error\":{\"code\":\"\(code.rawValue)\",\"message\":".utf8)
            + jsonString(message) + Data(",\"details\":null}}".utf8)
    }

    /// A JSON string literal for `text`.
    static func jsonString(_ text: String) -> Data {
        // Serialising a String fragment cannot fail: every Swift String is valid Unicode.
        (try? JSONSerialization.data(withJSONObject: text, options: [.fragmentsAllowed, .withoutEscapingSlashes]))
            ?? Data("\"\"".utf8)
    }

    /// What a hello line carries: its token, or why it is not a hello.
    static func helloToken(in line: Data) -> Result<String, HelloFault> {
        guard line.count <= maxHelloBytes else { return .failure(.tooLarge) }
        guard let object = try? JSONSerialization.jsonObject(with: line) as? [String: Any] else {
            return .failure(.malformed("The first message must be a hello: {\"v\": 1, \"type\": \"hello\", \"token\": …}."))
        }
        guard object["type"] as? String == "hello" else {
            return .failure(.malformed("The first message must be a hello: {\"v\": 1, \"type\": \"hello\", \"token\": …}."))
        }
        guard let version = object["v"] as? Int, version == ControlWire.version else {
            return .failure(.unsupportedVersion)
        }
        guard let token = object["token"] as? String else { return .failure(.missingToken) }
        return .success(token)
    }

    /// Why a first line was refused.
    enum HelloFault: Error, Equatable, CustomStringConvertible {
        case malformed(String)
        case missingToken
        case unsupportedVersion
        case tooLarge

        var description: String {
            switch self {
            case .malformed(let why): why
            case .missingToken: "The hello carries no token: read it from parleyd's control.token."
            case .unsupportedVersion: "This parleyd speaks control protocol version \(ControlWire.version) only."
            case .tooLarge: "A hello is at most \(ControlWire.maxHelloBytes) bytes, so the connection is closed."
            }
        }

        /// The error the client is told.
        var code: ControlErrorCode {
            switch self {
            case .malformed, .missingToken: .unauthorized
            case .unsupportedVersion: .unsupportedVersion
            case .tooLarge: .frameTooLarge
            }
        }
    }

    /// What a server line is, as the client sees it during the handshake.
    enum Reply: Equatable {
        case welcome
        case error(code: String, message: String)
        case other
    }

    /// Reads a line the server sent in answer to a hello.
    static func reply(_ line: Data) -> Reply {
        guard let object = try? JSONSerialization.jsonObject(with: line) as? [String: Any] else { return .other }
        switch object["type"] as? String {
        case "welcome":
            return .welcome
        case "error":
            let error = object["error"] as? [String: Any]
            return .error(code: error?["code"] as? String ?? "unknown", message: error?["message"] as? String ?? "")
        default:
            return .other
        }
    }

    /// Compares two tokens in time that depends only on their lengths, not on where they differ.
    static func tokensMatch(_ given: String, _ expected: [UInt8]) -> Bool {
        let bytes = Array(given.utf8)
        // The length is not secret (a token is always 64 characters); the content is compared in full.
        var difference: UInt8 = bytes.count == expected.count ? 0 : 1
        for index in 0..<expected.count {
            difference |= (index < bytes.count ? bytes[index] : 0) ^ expected[index]
        }
        return difference == 0
    }
}
