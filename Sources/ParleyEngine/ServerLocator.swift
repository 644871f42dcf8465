import Foundation
import SIPMessages
import SIPTransport

/// Finds where requests for a SIP URI's host go (RFC 3263: NAPTR, SRV, A/AAAA): the targets in failover order. The
/// node gives the engine one over c-ares on the SIP loop (never blocking it); `completion` runs on the engine's
/// thread, never inside `locate`. Numeric hosts never reach it: the engine takes them as they are.
public protocol SIPServerLocator: AnyObject {
    /// Locates `request`, trying only `transports` (those the engine listens on, in its order of preference).
    func locate(
        _ request: SIPServerRequest, transports: [SIPTransportKind],
        completion: @escaping (Result<[SIPDestination], SIPLocateError>) -> Void)
}

/// What is to be located: a URI's host, its port and transport when it names them, and whether it is `sips:`.
public struct SIPServerRequest: Sendable, Hashable {
    /// The host name (never a numeric address).
    public var host: String
    /// The port, when the URI gives one (then only A/AAAA are asked).
    public var port: Int?
    /// The transport, when the URI names one (`;transport=`).
    public var transport: SIPTransportKind?
    /// Whether the URI is `sips:` (TLS only).
    public var secure: Bool

    /// A request.
    public init(host: String, port: Int?, transport: SIPTransportKind?, secure: Bool) {
        self.host = host
        self.port = port
        self.transport = transport
        self.secure = secure
    }
}

/// Why a host could not be located, in words (which name, which record, what went wrong).
public struct SIPLocateError: Error, Sendable, CustomStringConvertible {
    /// The reason.
    public let description: String

    /// An error.
    public init(_ description: String) { self.description = description }
}
