import Foundation
import SDPFuzzChecks
import SIPMessages

/// One input: the value of an `a=crypto`, `a=fingerprint` or `a=setup` attribute (issue 42's parsers of peer text),
/// read directly and inside an SDP offer through libosip2. Reading may fail; it must not crash. What reads must write
/// back to the same value, its description must not show a key, and an offer it makes must be answered consistently.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzSDPSecurity(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let text = String(decoding: UnsafeBufferPointer(start: data, count: size), as: UTF8.self)
    if let crypto = try? SDPCrypto(attributeValue: text) {
        precondition((try? SDPCrypto(attributeValue: crypto.attributeValue)) == crypto, "a=crypto does not read back")
        let secret = Data(crypto.key.bytes).base64EncodedString()
        precondition(!crypto.description.contains(secret) && !"\(crypto.key)".contains(secret), "a key in a description")
    }
    if let fingerprint = try? SDPFingerprint(attributeValue: text) {
        precondition((try? SDPFingerprint(attributeValue: fingerprint.attributeValue)) == fingerprint, "a=fingerprint does not read back")
    }
    _ = SDPSetupRole(name: text)
    if case .unknown = SDPTransportProtocol(text) {} else {
        precondition(SDPTransportProtocol(SDPTransportProtocol(text).text) == SDPTransportProtocol(text), "a profile does not read back")
    }
    for profile in ["RTP/SAVP", "UDP/TLS/RTP/SAVPF"] {
        let body = "v=0\r\no=- 1 1 IN IP4 127.0.0.1\r\ns=-\r\nc=IN IP4 127.0.0.1\r\nt=0 0\r\na=fingerprint:\(text)\r\n"
            + "m=audio 5000 \(profile) 0\r\na=crypto:\(text)\r\na=setup:\(text)\r\na=fingerprint:\(text)\r\n"
        guard let offer = try? SDPSession.parse(Data(body.utf8)) else { continue }
        SecureAnswers.check(offer)
    }
    return 0
}
