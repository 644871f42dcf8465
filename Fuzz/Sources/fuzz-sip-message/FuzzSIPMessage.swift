import Foundation
import SIPMessages

/// One input: a datagram as it could arrive. Parsing may fail; it must not crash, hang or leak.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzSIPMessage(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    _ = try? SIPMessage.parse(Data(bytes: data, count: size))
    return 0
}
