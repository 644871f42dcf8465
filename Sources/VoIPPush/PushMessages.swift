import Foundation

extension String {
    /// At most `limit` Unicode scalars, with "…" when cut: how peer text is echoed in errors and logs, so that
    /// an answer never outgrows a frame.
    func clipped(to limit: Int = 64) -> String {
        guard unicodeScalars.count > limit else { return self }
        var view = String.UnicodeScalarView()
        view.append(contentsOf: unicodeScalars.prefix(limit))
        return String(view) + "…"
    }
}

/// `registered {token, strikes, disabled}`: the simulator's answer to a device's `register`.
public struct PushRegistration: Sendable, Hashable, Codable {
    /// The token the device registered.
    public var token: String
    /// Pushes so far that the device failed to report (or to ack in time).
    public var strikes: Int
    /// Whether the token has been disabled for too many strikes: no push will reach it again.
    public var disabled: Bool

    /// A registration answer.
    public init(token: String, strikes: Int, disabled: Bool) {
        self.token = token
        self.strikes = strikes
        self.disabled = disabled
    }
}

/// `push {id, token, payload, collapseID?}`: one push handed to a device. The device answers with an ack
/// carrying the same `id`.
public struct PushDelivery: Sendable, Hashable, Codable {
    /// The simulator's id for this push (`p1`, `p2`, …), echoed by the ack.
    public var id: String
    /// The token the push was sent to.
    public var token: String
    /// What the push says.
    public var payload: PushPayload
    /// The sender's collapse id, if it gave one.
    public var collapseID: String?

    /// A push delivery.
    public init(id: String, token: String, payload: PushPayload, collapseID: String? = nil) {
        self.id = id
        self.token = token
        self.payload = payload
        self.collapseID = collapseID
    }
}

/// What a device's push handler returns, and so what the device acks: whether it reported a conversation to
/// its engine before returning (the PushKit rule). Not reporting a call push is a strike against the token.
public struct PushAck: Sendable, Hashable, Codable {
    /// The device reported the conversation before its handler returned.
    public var reported: Bool
    /// Why it did not (or any remark), for the simulator's log and the sender's outcome.
    public var reason: String?

    /// An ack.
    public init(reported: Bool, reason: String? = nil) {
        self.reported = reported
        self.reason = reason
    }

    /// The conversation was reported.
    public static let reported = PushAck(reported: true)

    /// The conversation was not reported, because of `reason`.
    public static func notReported(_ reason: String) -> PushAck { PushAck(reported: false, reason: reason) }
}

/// `send {token, payload, collapseID?, expiration?}`: a sender asks the simulator to push to a token.
public struct PushSendRequest: Sendable, Hashable, Codable {
    /// The device token to push to.
    public var token: String
    /// What to push.
    public var payload: PushPayload
    /// A newer push with the same collapse id replaces an older one still stored for the device (at most 64
    /// bytes of UTF-8, as in APNs).
    public var collapseID: String?
    /// How long, in seconds from now, the simulator may store the push while the device is offline (never
    /// past the payload's `expiresAt`). 0: deliver now or never. Nil: until the payload expires.
    public var expiration: TimeInterval?

    /// A send request.
    public init(token: String, payload: PushPayload, collapseID: String? = nil, expiration: TimeInterval? = nil) {
        self.token = token
        self.payload = payload
        self.collapseID = collapseID
        self.expiration = expiration
    }
}

/// `outcome {token, pushID?, result, reported?, detail}`: what became of a send request.
public struct PushOutcome: Sendable, Hashable, Codable {
    /// What became of the push.
    public enum Result: String, Sendable, Hashable, Codable, CaseIterable {
        /// Handed to the connected device, which acked it (see ``PushOutcome/reported``).
        case delivered
        /// The device is offline: the push waits for it (until it expires).
        case stored
        /// The push had expired (or could not wait, with expiration 0): dropped.
        case expired
        /// No device ever registered this token.
        case unknownToken
        /// The token was disabled for too many strikes.
        case tokenDisabled
        /// The request's values are wrong (the detail names the field).
        case invalid

        /// Whether the push was accepted: delivered or stored.
        public var isAccepted: Bool {
            switch self {
            case .delivered, .stored: true
            case .expired, .unknownToken, .tokenDisabled, .invalid: false
            }
        }
    }

    /// The token of the request.
    public var token: String
    /// The simulator's id for the push, when it made one (delivered or stored).
    public var pushID: String?
    /// What became of the push.
    public var result: Result
    /// For `delivered`: whether the device reported the conversation in time.
    public var reported: Bool?
    /// A sentence for people.
    public var detail: String

    /// An outcome.
    public init(token: String, pushID: String? = nil, result: Result, reported: Bool? = nil, detail: String) {
        self.token = token
        self.pushID = pushID
        self.result = result
        self.reported = reported
        self.detail = detail
    }
}

/// `statusReport {devices, counters}`: the simulator's state, answering `status`.
public struct PushStatusReport: Sendable, Hashable, Codable {
    /// One known token.
    public struct Device: Sendable, Hashable, Codable {
        /// The token.
        public var token: String
        /// Whether a connection currently holds the token.
        public var connected: Bool
        /// Strikes so far.
        public var strikes: Int
        /// Whether the token is disabled.
        public var disabled: Bool
        /// Pushes stored for the device while it is offline.
        public var queued: Int

        /// A device line.
        public init(token: String, connected: Bool, strikes: Int, disabled: Bool, queued: Int) {
            self.token = token
            self.connected = connected
            self.strikes = strikes
            self.disabled = disabled
            self.queued = queued
        }
    }

    /// Every token ever registered, sorted by token (the first ones only when they would not fit in a frame).
    public var devices: [Device]
    /// How many devices were left out of ``devices`` to fit the report in a frame; nil when none were.
    public var omittedDevices: Int?
    /// Event counts since the simulator started.
    public var counters: PushCounters

    /// A report.
    public init(devices: [Device], omittedDevices: Int? = nil, counters: PushCounters) {
        self.devices = devices
        self.omittedDevices = omittedDevices
        self.counters = counters
    }
}

/// What the simulator has counted since it started.
public struct PushCounters: Sendable, Hashable, Codable {
    /// `register` messages accepted.
    public var registrations = 0
    /// `send` requests received.
    public var sendRequests = 0
    /// Pushes written to a device (at once or from storage).
    public var pushed = 0
    /// Acks saying the conversation was reported.
    public var reported = 0
    /// Acks saying it was not.
    public var notReported = 0
    /// Pushes not acked within the ack timeout.
    public var ackTimeouts = 0
    /// Pushes whose device disconnected before acking.
    public var lostInFlight = 0
    /// Pushes stored for an offline device.
    public var stored = 0
    /// Stored pushes replaced by a newer one with the same collapse id.
    public var collapsed = 0
    /// Pushes dropped as expired (at send or while stored).
    public var expired = 0
    /// Stored pushes dropped because too many were waiting, or because the token was disabled.
    public var droppedStored = 0
    /// Sends to tokens never registered.
    public var unknownToken = 0
    /// Sends refused because the token is disabled.
    public var tokenDisabled = 0
    /// Sends refused for bad values.
    public var invalid = 0
    /// Strikes given.
    public var strikes = 0
    /// Tokens disabled.
    public var disabledTokens = 0
    /// Frames answered with an `error` (malformed, unknown, unexpected, out of step).
    public var protocolErrors = 0

    /// All zero.
    public init() {}
}

/// `error {code, message, path?}`: a peer fault, reported to the peer that made it. Also the error the codec
/// throws for a frame it cannot read.
public struct PushFault: Error, Sendable, Hashable, Codable, CustomStringConvertible {
    /// A machine-readable error code. A string wrapper rather than an enum so that a client can read codes
    /// a newer simulator sends.
    public struct Code: RawRepresentable, Sendable, Hashable, Codable, CustomStringConvertible {
        /// The code as sent.
        public let rawValue: String
        /// Wraps a code.
        public init(rawValue: String) { self.rawValue = rawValue }
        /// The raw code.
        public var description: String { rawValue }

        /// The frame is not a JSON object.
        public static let malformedJSON = Code(rawValue: "malformedJSON")
        /// `v` is not a version this side speaks (the message names the supported one).
        public static let unsupportedVersion = Code(rawValue: "unsupportedVersion")
        /// `type` names no message this protocol has.
        public static let unknownType = Code(rawValue: "unknownType")
        /// A member is missing, of the wrong type or has a bad value (`path` names it).
        public static let badField = Code(rawValue: "badField")
        /// A frame announced a body over the limit; the connection is closed after this error.
        public static let frameTooLarge = Code(rawValue: "frameTooLarge")
        /// The message is valid but not one this side accepts (a device sending `push`, say).
        public static let unexpectedMessage = Code(rawValue: "unexpectedMessage")
        /// An ack for a push that is not waiting for one from this connection (unknown, already acked, timed out).
        public static let unknownPush = Code(rawValue: "unknownPush")
        /// The token was disabled for too many strikes.
        public static let tokenDisabled = Code(rawValue: "tokenDisabled")
        /// Another connection registered this connection's token; pushes now go there.
        public static let replaced = Code(rawValue: "replaced")
    }

    /// What kind of fault.
    public var code: Code
    /// A sentence for people; for `badField` it starts with the path.
    public var message: String
    /// For `badField`: the JSON path of the member at fault, such as `payload.handle.kind`.
    public var path: String?

    /// A fault.
    public init(code: Code, message: String, path: String? = nil) {
        self.code = code
        self.message = message
        self.path = path
    }

    /// `code: message`.
    public var description: String { "\(code): \(message)" }
}
