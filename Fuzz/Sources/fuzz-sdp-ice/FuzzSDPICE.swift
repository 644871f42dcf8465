import Foundation
import SIPMessages

/// One input: the value of an `a=candidate` attribute (issue 43's parser of peer text), read directly, then inside an
/// offer as a candidate line, as the ice-options and as the session's ufrag and pwd (a line break in it makes more
/// lines: many candidates, other ICE attributes). Reading may fail; it must not crash. A candidate must write back to
/// itself; a stream's ICE must keep within its bounds, hold only usable candidates, read back the same from what
/// Parley writes, never show its pwd in a description and never be copied into an answer.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzSDPICE(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let text = String(decoding: UnsafeBufferPointer(start: data, count: size), as: UTF8.self)
    if let candidate = SDPCandidate(attributeValue: text) {
        precondition(SDPCandidate(attributeValue: candidate.attributeValue) == candidate, "a=candidate does not read back")
        precondition((1...256).contains(candidate.component) && (1...65_535).contains(candidate.port), "out of range")
        _ = candidate.isUsable
    }
    let head = "v=0\r\no=- 1 1 IN IP4 127.0.0.1\r\ns=-\r\nc=IN IP4 127.0.0.1\r\nt=0 0\r\n"
    let credentials = "a=ice-ufrag:abcd\r\na=ice-pwd:asd88fgpdd777uzjYhagZg+/\r\n"
    let bodies = [
        head + "m=audio 5000 RTP/AVP 0\r\n" + credentials + "a=candidate:\(text)\r\na=candidate:\(text)\r\n",
        head + "a=ice-lite\r\na=ice-ufrag:\(text)\r\na=ice-pwd:\(text)\r\nm=audio 5000 RTP/AVP 0\r\na=ice-options:\(text)\r\n"
            + "a=candidate:1 1 UDP 1 10.0.0.1 5000 typ host\r\n",
    ]
    for body in bodies {
        guard let offer = try? SDPSession.parse(Data(body.utf8)), let ice = offer.ice else { continue }
        check(ice)
        var copy = ice
        copy.droppedCandidates = 0
        if let reread = try? SDPSession.parse(offer.serialize()) {
            precondition(reread.ice == copy, "ICE does not read back")
        }
        let answer = offer.answer(origin: offer.origin, connectionAddress: "192.0.2.4", audioPort: 4000)
        precondition(answer?.ice == nil, "an offer's ICE copied into its answer")
        // (Unless the input put the same text in a field that is shown: the ufrag, an option, a foundation.)
        let shown = ([ice.ufrag] + ice.options + ice.candidates.map(\.description)).joined(separator: " ")
        if !shown.contains(ice.pwd) {
            precondition(!"\(offer)".contains(ice.pwd) && !"\(ice)".contains(ice.pwd), "a pwd in a description")
        }
    }
    return 0
}

/// Traps when `ice` breaks a bound of RFC 8839 or of reading.
func check(_ ice: SDPICE) {
    precondition(SDPICE.ufragLength.contains(ice.ufrag.utf8.count) && SDPICE.pwdLength.contains(ice.pwd.utf8.count), "credentials")
    precondition(ice.options.count <= SDPICE.maximumOptions && Set(ice.options).count == ice.options.count, "options")
    precondition(ice.candidates.count <= SDPICE.maximumCandidateLines && ice.droppedCandidates >= 0, "candidates")
    precondition(Set(ice.candidates).count == ice.candidates.count, "a duplicate candidate")
    for candidate in ice.candidates {
        precondition(candidate.isUsable, "an unusable candidate kept")
        let sameComponent = ice.candidates.filter { $0.component == candidate.component }.count
        precondition(sameComponent <= SDPICE.maximumCandidatesPerComponent, "too many candidates for a component")
    }
}
