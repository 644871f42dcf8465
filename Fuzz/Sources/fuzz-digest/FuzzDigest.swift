import Foundation
import SIPSignaling

/// One input: a `WWW-Authenticate` (or `Proxy-Authenticate`, by the first byte's low bit) header value. Reading may
/// fail; it must not crash.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzDigest(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    guard size > 0 else { return 0 }
    let origin: DigestChallenge.Origin = data[0] & 1 == 0 ? .server : .proxy
    _ = try? DigestChallenge.parse(String(decoding: UnsafeBufferPointer(start: data + 1, count: size - 1), as: UTF8.self), origin: origin)
    return 0
}
