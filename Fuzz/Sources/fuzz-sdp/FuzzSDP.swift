import Foundation
import SIPMessages

/// One input: an SDP body. Parsing may fail; it must not crash, hang or leak.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzSDP(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    _ = try? SDPSession.parse(Data(bytes: data, count: size))
    return 0
}
