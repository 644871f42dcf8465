import Foundation
import VoIPPush

/// One input: the bytes of a proxy's evapi connection, fed in two pieces; every whole netstring is parsed as a push
/// event. A fault is a value; nothing may crash or hang, and a parsed event's fields hold what the checks promise.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzProxyEvent(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let bytes = UnsafeBufferPointer(start: data, count: size)
    var decoder = NetstringDecoder(maximumLength: 4096)
    for piece in [bytes[..<(size / 2)], bytes[(size / 2)...]] {
        decoder.feed(piece)
        while let payload = try? decoder.next() {
            precondition(payload.count <= 4096, "a payload over the limit came out")
            guard let event = try? ProxyPushEvent.parse(payload) else { continue }
            precondition(!event.callID.isEmpty && !event.token.isEmpty, "an event without a Call-ID or token parsed")
            precondition(PushService.tokenProblem(event.token) == nil, "an event with a bad token parsed")
        }
    }
    return 0
}
