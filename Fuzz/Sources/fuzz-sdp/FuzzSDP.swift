import Foundation
import SDPFuzzChecks
import SIPMessages

/// One input: an SDP body. Parsing may fail; it must not crash, hang or leak. An offer that parses is answered as
/// Parley would answer it, plain and with SDES and DTLS, and each answer must agree with it (SecureAnswers); its video
/// stream's parameters stay in bounds and its video answer reads back (VideoChecks). The same bytes are also read as
/// a media section's attribute lines for payload type 96 (the fmtp and rtcp-fb parsers alone).
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzSDP(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let bytes = Data(bytes: data, count: size)
    if let offer = try? SDPSession.parse(bytes) {
        SecureAnswers.check(offer)
        VideoChecks.check(offer)
    }
    let lines = String(decoding: bytes, as: UTF8.self).split(whereSeparator: \.isNewline)
    VideoChecks.check(SDPVideoParameters(payloadType: 96, attributes: lines))
    return 0
}
