import Foundation
import ParleyIO
import Testing

/// A stranger's STUN Binding requests to a call's ICE candidate (docs/robustness.md, the ICE row): libnice checks
/// MESSAGE-INTEGRITY with the call's password and answers a wrong one with 401, never with a success, so the stranger
/// is granted no path and no consent; the call's audio goes on. The callee's ufrag and candidate are read from its SIP
/// answer off loopback (`LoopbackCapture`: root, as the SRTP and DTLS eavesdropping tests need). libnice counts none
/// of these: see docs/robustness.md.
extension AudioInterop {
    @Suite("Interop: a stranger's STUN checks during an ICE call", .serialized, .timeLimit(.minutes(1)))
    struct ICEStrangerTests {
        typealias Audio = AudioInteropTests

        /// What the callee's SDP answer says of its ICE: its ufrag, its password and its RTP host candidate's port.
        struct CalleeICE {
            let ufrag: String
            let password: String
            let rtpPort: Int

            /// Read from the SDP of a `SIP/2.0 200` among `datagrams` (the callee's responses, as captured).
            init(answerAmong datagrams: [[UInt8]]) throws {
                let texts = datagrams.map { String(decoding: $0, as: UTF8.self) }
                let answer = try #require(texts.first { $0.hasPrefix("SIP/2.0 200") && $0.contains("a=ice-ufrag:") }, "\(texts)")
                let lines = answer.split(separator: "\r\n").map(String.init)
                func value(_ prefix: String) -> String? { lines.first { $0.hasPrefix(prefix) }.map { String($0.dropFirst(prefix.count)) } }
                // a=candidate:FOUNDATION COMPONENT TRANSPORT PRIORITY ADDRESS PORT typ host
                let host = lines.compactMap { line -> [Substring]? in
                    let fields = line.split(separator: " ")
                    return line.hasPrefix("a=candidate:") && fields.count >= 8 && fields[1] == "1" && fields[7] == "host" ? fields : nil
                }.first
                ufrag = try #require(value("a=ice-ufrag:"), "\(answer)")
                password = try #require(value("a=ice-pwd:"), "\(answer)")
                rtpPort = try #require(host.flatMap { Int($0[5]) }, "\(answer)")
            }
        }

        /// A Binding request from the stranger to the callee: USERNAME as a peer's check has it (the callee's ufrag,
        /// then the stranger's), PRIORITY, ICE-CONTROLLING, MESSAGE-INTEGRITY keyed by `password`, FINGERPRINT.
        static func check(to callee: CalleeICE, password: String) -> (id: [UInt8], bytes: [UInt8]) {
            let request = STUNMessage(type: STUNMessage.bindingRequest, attributes: [
                (STUNMessage.username, Array("\(callee.ufrag):strg".utf8)),
                (STUNMessage.priority, STUNMessage.bigEndian(1_853_824_767)),
                (STUNMessage.iceControlling, SecureRandom.bytes(8)),
            ])
            return (request.transactionID, request.encoded(integrity: password))
        }

        @Test("a stranger sends 50 Binding requests with the callee's ufrag and a wrong password to its RTP candidate during an ICE call: each is answered 401, none with a success, the stranger gets no media and the selected pair stays; the call's audio goes on both ways. (The same request with the right password is answered with a success: it is the password that fails.)")
        func wrongPassword() throws {
            let (callee, calleeFolder) = try Audio.parleyd(tone: 440, ["--auto-answer", "0", "--ice", "on"])
            defer { try? FileManager.default.removeItem(at: calleeFolder) }
            let (caller, callerFolder) = try Audio.parleyd(tone: 1_000, ["--ice", "on", "--script", "wait 5000; end"])
            defer { try? FileManager.default.removeItem(at: callerFolder) }
            // The callee's SIP responses to the caller, read off loopback: its answer names its ICE.
            let capture = try LoopbackCapture(port: caller.port, from: callee.port)
            let call = try ControlCLIPolishTests.parley(
                ["call", "sip:parley@127.0.0.1:\(callee.port)", "--data-dir", caller.dataDirectory.path])
            #expect(call.status == 0, "\(call.stderr)")
            _ = try callee.process.waitForLine("the callee's selected RTP pair") { $0.contains("ICE: RTP goes") }
            capture.stop()
            let ice = try CalleeICE(answerAmong: capture.datagrams)

            let stranger = try STUNSocket(readTimeout: .milliseconds(50))
            defer { stranger.close() }
            var wrong: Set<[UInt8]> = []
            var (successes, unauthorized, others) = (0, 0, [String]())
            func drain(_ take: ([UInt8]) -> Void) {
                while let (bytes, _) = stranger.receive() { take(bytes) }
            }
            // 50 requests, one every 50 ms or so: 2.5 s of the 5 s call.
            for _ in 0..<50 {
                let (id, bytes) = Self.check(to: ice, password: "notThePasswordNotThePassword")
                wrong.insert(id)
                stranger.send(bytes, toPort: ice.rtpPort)
                drain { bytes in
                    guard let message = STUNMessage(bytes), wrong.contains(message.transactionID) else {
                        return others.append(bytes.prefix(4).map { String(format: "%02x", $0) }.joined())
                    }
                    if message.type == STUNMessage.bindingSuccess { successes += 1 }
                    if message.type == STUNMessage.bindingError && message.errorStatus == 401 { unauthorized += 1 }
                }
            }
            #expect(successes == 0, "no Binding success for a wrong password")
            #expect(unauthorized == 50, "each answered 401 Unauthorized (\(unauthorized) of 50)")
            #expect(others.isEmpty, "nothing else came to the stranger (no check, no RTP): \(others)")

            // The control: the same request with the callee's password is answered with a success.
            let (id, bytes) = Self.check(to: ice, password: ice.password)
            stranger.send(bytes, toPort: ice.rtpPort)
            var granted = false
            drain { bytes in granted = granted || STUNMessage(bytes).map { $0.type == STUNMessage.bindingSuccess && $0.transactionID == id } == true }
            #expect(granted, "the right password is answered with a success")
            print("a stranger's checks: \(unauthorized) of 50 answered 401, \(successes) with a success; the right password: "
                + (granted ? "a success" : "no success"))

            try caller.waitForEnded(1)
            try callee.waitForEnded(1)
            #expect(caller.transitions == [["idle", "ringing", "joined", "leaving", "left (localEnded)"]])
            let pairs = callee.process.lines.filter { $0.contains("ICE: RTP goes") }
            #expect(pairs.count == 1 && pairs[0].contains("↔ host 127.0.0.1:"), "the selected pair stayed: \(pairs)")
            #expect(!callee.process.lines.contains { $0.contains("ICE failed") })
            let heardByCallee = try Audio.recording(in: calleeFolder, of: callee)
            let heardByCaller = try Audio.recording(in: callerFolder, of: caller)
            #expect(heardByCallee.seconds(at: 1_000) >= 0.8 * 5, "the callee heard \(heardByCallee.dominantFrequencies())")
            #expect(heardByCaller.seconds(at: 440) >= 0.8 * 5, "the caller heard \(heardByCaller.dominantFrequencies())")
        }
    }
}
