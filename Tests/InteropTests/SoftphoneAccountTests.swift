import Foundation
import ParleyTestSupport
import Testing

/// Softphones and parleyd as accounts of one provider (issue 41): Kamailio serving example.test, baresip 1.0.0
/// registered as carol@example.test and linphonec 5.1 as dave@example.test, parleyd as alice@example.test through
/// `--outbound-proxy`. Each side calls the other by user name, and the audio is checked by frequency both ways:
/// parleyd sends 1,000 Hz, the softphones 440 Hz.
extension AudioInterop {
    @Suite("Interop: baresip and linphonec registered at Kamailio, calling parleyd by name", .serialized,
           .timeLimit(.minutes(1)))
    struct SoftphoneAccountTests {
        static let domain = "example.test"
        /// Seconds of call: parleyd ends each call this long after it joined (`--script`).
        static let talked = 3.0

        /// parleyd's arguments for the account alice@example.test through the outbound proxy on `proxyPort`,
        /// ending each call `talked` seconds after it joined.
        static func alice(proxyPort: UInt16, _ extra: [String] = []) -> [String] {
            ["--user", "alice", "--register", "sip:\(domain)", "--aor", "sip:alice@\(domain)",
             "--outbound-proxy", "sip:127.0.0.1:\(proxyPort)", "--script", "wait \(Int(talked * 1_000)); end"] + extra
        }

        /// Waits until Kamailio has a binding for `user`.
        static func waitForBinding(_ user: String, at kamailio: Kamailio) throws {
            try kamailio.waitForLog("\(user)'s registration") { $0.contains("registered sip:\(user)@\(domain) from") }
        }

        /// `parley call NAME` against the parleyd whose data directory is `data`: placed, to NAME at the domain.
        static func call(_ name: String, data: URL) throws {
            let run = try AccountDialTests.parley(["call", name, "--json", "--data-dir", data.path])
            #expect(run.status == 0, "\(run.stdout) \(run.stderr)")
            #expect(run.stdout.first?.contains(#""value":"sip:\#(name)@\#(domain)""#) == true, "\(run.stdout)")
        }

        /// The one call parleyd made or took: it joined and parleyd ended it.
        static func expectOneCallEndedByParleyd(_ transitions: [[String]]) {
            #expect(transitions.count == 1 && transitions.first?.contains("joined") == true
                && transitions.first?.last == "left (localEnded)", "\(transitions)")
        }

        /// parleyd's history has the call from `caller` (the softphone's address of record: dialable back).
        static func expectCaller(_ caller: String, data: URL) throws {
            let history = try AccountDialTests.parley(["history", "--json", "--data-dir", data.path])
            #expect(history.status == 0, "\(history.stderr)")
            let text = history.stdout.joined(separator: "\n")
            #expect(text.contains(#""value" : "\#(caller)""#), "\(text)")
        }

        /// Kamailio saw the INVITE for `target` come in with the outbound proxy's pre-loaded Route.
        static func expectRouted(_ target: String, at kamailio: Kamailio) {
            let route = "pre-loaded Route <sip:127.0.0.1:\(kamailio.port);lr> on INVITE \(target)"
            #expect(kamailio.log.contains { $0.contains(route) }, "\(kamailio.log.filter { $0.contains("INVITE") })")
        }

        /// Each heard the other's tone for most of the call, and not its own.
        static func expectAudio(parleydHeard: Recording, softphoneHeard: Recording) {
            let byParleyd = parleydHeard.seconds(at: 440), bySoftphone = softphoneHeard.seconds(at: 1_000)
            #expect(byParleyd >= 0.8 * talked && byParleyd <= talked + 0.8, "parleyd heard \(parleydHeard.dominantFrequencies())")
            #expect(bySoftphone >= 0.8 * talked && bySoftphone <= talked + 0.8, "the softphone heard \(softphoneHeard.dominantFrequencies())")
            #expect(parleydHeard.seconds(at: 1_000) == 0 && softphoneHeard.seconds(at: 440) == 0)
        }

        // MARK: baresip (on the machine's loopback, with Kamailio and parleyd)

        /// baresip registered as carol@example.test through Kamailio (its `outbound` is the account's outbound proxy,
        /// a pre-loaded Route; it registers at the AOR's domain), answering at once, recording into `folder`.
        static func carol(at kamailio: Kamailio, recordTo folder: URL) throws -> Baresip {
            let baresip = try Baresip(
                recordTo: folder,
                account: "<sip:carol@\(domain)>;outbound=\"sip:127.0.0.1:\(kamailio.port)\";answermode=auto")
            try baresip.quotingTranscript { try waitForBinding("carol", at: kamailio) }
            return baresip
        }

        @Test("parleyd (alice) calls baresip by its user name, carol: audio both ways")
        func parleydCallsBaresip() throws {
            let kamailio = try Kamailio(.init(domain: Self.domain))
            defer { kamailio.stop() }
            let baresipFolder = try BaresipAudioTests.folder()
            defer { try? FileManager.default.removeItem(at: baresipFolder) }
            let baresip = try Self.carol(at: kamailio, recordTo: baresipFolder)
            let (parleyd, parleydFolder) = try AudioInteropTests.parleyd(tone: 1_000, Self.alice(proxyPort: kamailio.port))
            defer { try? FileManager.default.removeItem(at: parleydFolder) }
            try baresip.quotingTranscript {
                try parleyd.process.waitForLine("its registration") { $0.contains("registration: registered") }
                try Self.call("carol", data: parleyd.dataDirectory)
                try parleyd.waitForEnded(1, timeout: .seconds(15))
                try baresip.waitFor("the end of its session") { $0.contains("session closed") }
                Self.expectOneCallEndedByParleyd(parleyd.transitions)
                Self.expectRouted("sip:carol@\(Self.domain)", at: kamailio)
                // The INVITE reached baresip at its registered contact, from alice's address of record (dialable back).
                let invite = baresip.messages.first { $0.startLine.hasPrefix("INVITE ") }
                // (baresip 1.0.0 registers a contact user of its own, carol-0x…, at its address.)
                #expect(invite?.startLine.hasPrefix("INVITE sip:carol-") == true
                    && invite?.startLine.contains("@127.0.0.1:\(baresip.port) ") == true, "\(invite?.description ?? "no INVITE")")
                #expect(invite?.header("From")?.contains("<sip:alice@\(Self.domain)>") == true, "\(invite?.description ?? "")")
                #expect(invite?.header("To")?.contains("<sip:carol@\(Self.domain)>") == true, "\(invite?.description ?? "")")
                Self.expectAudio(
                    parleydHeard: try AudioInteropTests.recording(in: parleydFolder, of: parleyd),
                    softphoneHeard: try BaresipAudioTests.received(in: baresipFolder))
            }
        }

        @Test("baresip (carol) calls parleyd by its user name, alice: audio both ways")
        func baresipCallsParleyd() throws {
            let kamailio = try Kamailio(.init(domain: Self.domain))
            defer { kamailio.stop() }
            let (parleyd, parleydFolder) = try AudioInteropTests.parleyd(
                tone: 1_000, Self.alice(proxyPort: kamailio.port, ["--auto-answer", "0"]))
            defer { try? FileManager.default.removeItem(at: parleydFolder) }
            try parleyd.process.waitForLine("its registration") { $0.contains("registration: registered") }
            let baresipFolder = try BaresipAudioTests.folder()
            defer { try? FileManager.default.removeItem(at: baresipFolder) }
            let baresip = try Self.carol(at: kamailio, recordTo: baresipFolder)
            try baresip.quotingTranscript {
                // A bare user: baresip completes it with its account's domain (sip:alice@example.test).
                try baresip.send("/dial alice")
                try parleyd.waitForEnded(1, timeout: .seconds(15))
                try baresip.waitFor("the end of its session") { $0.contains("session closed") }
                Self.expectOneCallEndedByParleyd(parleyd.transitions)
                Self.expectRouted("sip:alice@\(Self.domain)", at: kamailio)
                try Self.expectCaller("sip:carol@\(Self.domain)", data: parleyd.dataDirectory)
                Self.expectAudio(
                    parleydHeard: try AudioInteropTests.recording(in: parleydFolder, of: parleyd),
                    softphoneHeard: try BaresipAudioTests.received(in: baresipFolder))
            }
        }

        // MARK: linphonec (in a namespace with only loopback, with Kamailio and parleyd)

        /// Kamailio in a namespace of the test's own, with linphonec registered there as dave@example.test and a
        /// parleyd registered as alice (`extra` added to its arguments); returned once both are registered.
        static func daveAndAlice(_ extra: [String]) throws -> (LoopbackNamespace, Kamailio, LinphoneAndParleyd) {
            let namespace = try LoopbackNamespace()
            let kamailio = try Kamailio(.init(domain: domain), namespace: namespace.name)
            let peers = try LinphoneAndParleyd(
                namespace: namespace.name, account: .init(identity: "sip:dave@\(domain)", proxyPort: kamailio.port)
            ) { _ in alice(proxyPort: kamailio.port, extra) }
            try peers.process.waitForLine("parleyd's registration") { $0.contains("registration: registered") }
            do {
                try waitForBinding("dave", at: kamailio)
            } catch {
                throw InteropError("\(error)\nlinphonec said: \(peers.linphoneOutput)")
            }
            return (namespace, kamailio, peers)
        }

        @Test("parleyd (alice) calls linphonec by its user name, dave: audio both ways")
        func parleydCallsLinphone() throws {
            let (namespace, kamailio, peers) = try Self.daveAndAlice([])
            try withExtendedLifetime(namespace) {
                defer { kamailio.stop() }
                // parleyd's control socket is a path: reachable from outside the namespace.
                try Self.call("dave", data: peers.parleydData)
                try peers.process.waitForLine(timeout: .seconds(15), "the call's end") { $0.contains("left (localEnded)") }
                try peers.waitForLinphone("connected")
                // linphonec names the caller by alice's address of record.
                #expect(peers.linphoneOutput.contains("call from \"Alice\" <sip:alice@\(Self.domain)>"), "\(peers.linphoneOutput)")
                Self.expectRouted("sip:dave@\(Self.domain)", at: kamailio)
                try peers.process.waitForLine("parleyd's complete recording") { $0.contains("recording complete:") }
                try peers.waitForLinphone("ended")  // its recording is complete
                Self.expectAudio(parleydHeard: try peers.parleydHeard(), softphoneHeard: try peers.linphoneHeard())
            }
        }

        @Test("linphonec (dave) calls parleyd by its user name, alice: audio both ways")
        func linphoneCallsParleyd() throws {
            let (namespace, kamailio, peers) = try Self.daveAndAlice(["--auto-answer", "0"])
            try withExtendedLifetime(namespace) {
                defer { kamailio.stop() }
                // A bare user: linphonec completes it with its default proxy's identity domain.
                peers.send("call alice")
                try peers.process.waitForLine(timeout: .seconds(15), "the call's end") { $0.contains("left (localEnded)") }
                Self.expectRouted("sip:alice@\(Self.domain)", at: kamailio)
                try Self.expectCaller("sip:dave@\(Self.domain)", data: peers.parleydData)
                try peers.process.waitForLine("parleyd's complete recording") { $0.contains("recording complete:") }
                try peers.waitForLinphone("ended")  // its recording is complete
                Self.expectAudio(parleydHeard: try peers.parleydHeard(), softphoneHeard: try peers.linphoneHeard())
            }
        }
    }
}
