import Foundation
import SDPFuzzChecks
import SIPMessages

/// One input: an SDP body. Parsing may fail; it must not crash, hang or leak. An offer that parses is answered as
/// Parley would answer it, plain and with SDES and DTLS, and each answer must agree with it (SecureAnswers).
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzSDP(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    if let offer = try? SDPSession.parse(Data(bytes: data, count: size)) { SecureAnswers.check(offer) }
    return 0
}
