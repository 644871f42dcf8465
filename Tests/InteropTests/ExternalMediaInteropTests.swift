import ControlChannel
import ControlProtocol
import Foundation
import ParleyTestSupport
import Testing

/// `parleyd --media external`: the test is the frontend. It names its own RTP socket in `start`, learns the
/// negotiated session from `mediaChanged`, and exchanges real G.711 audio with a second parleyd carrying its own.
extension AudioInterop {
    @Suite("Interop: a frontend carrying its own RTP (--media external)", .serialized)
    struct ExternalMediaInteropTests {
        @Test("start names the frontend's RTP socket; mediaChanged gives the session; 440 Hz one way, 1,000 Hz back")
        func frontendCarriesTheAudio() throws {
            let (callee, calleeFolder) = try AudioInteropTests.parleyd(tone: 1_000, ["--auto-answer", "0"])
            defer { try? FileManager.default.removeItem(at: calleeFolder) }
            let daemon = try Parleyd(["--media", "external"])
            try daemon.process.waitForLine("the external media line") { $0.contains("audio: carried by the frontend") }
            let frontend = try RTPFrontend()
            let control = try ControlSession(daemon)
            _ = try control.request(.subscribe(SubscribeParams()))
            let media = MediaEndpointParams(address: "127.0.0.1", port: frontend.port)
            let started = try control.request(.start(StartParams(to: "sip:parley@127.0.0.1:\(callee.port)", media: media)))
            let uuid = try #require((started["conversation"] as? [String: Any])?["uuid"] as? String)
            let session = try #require(try control.nextMedia(of: uuid), "a mediaChanged with a session")
            #expect(session.localAddress == "127.0.0.1" && session.localPort == frontend.port)
            #expect(session.localRTCPPort == frontend.port + 1)
            #expect(session.remoteAddress == "127.0.0.1" && session.codec == "PCMU" && session.payloadType == 0)
            #expect(session.clockRate == 8000 && session.direction == "sendrecv")
            #expect(session.telephoneEvent == nil, "our offer listed no telephone-event: the stream is the frontend's")

            // Two seconds of 440 Hz to the callee while its 1,000 Hz comes back to our socket.
            let sender = Thread { frontend.sendTone(440, to: session.remotePort, seconds: 2) }
            sender.start()
            let heard = frontend.receive(seconds: 2.5)
            #expect(heard.seconds(at: 1_000) >= 0.8 * 2, "the frontend heard \(heard.dominantFrequencies())")

            _ = try control.request(.end(ConversationParams(conversation: uuid)))
            #expect(try control.nextMedia(of: uuid) == nil, "the end is a mediaChanged with no session")
            try callee.waitForEnded(1)
            let heardByCallee = try AudioInteropTests.recording(in: calleeFolder, of: callee)
            #expect(heardByCallee.seconds(at: 440) >= 0.8 * 2, "the callee heard \(heardByCallee.dominantFrequencies())")
        }

        @Test("media is refused where parleyd carries the audio itself, and a bad endpoint names its field")
        func badMediaParams() throws {
            let (own, folder) = try AudioInteropTests.parleyd(tone: 440, [])
            defer { try? FileManager.default.removeItem(at: folder) }
            let control = try ControlSession(own)
            let media = MediaEndpointParams(port: 50_000)
            let refused = try control.error(.start(StartParams(to: "sip:nobody@127.0.0.1:9", media: media)))
            #expect(refused.code == "invalidParams" && refused.field == "media", "\(refused)")
            #expect(refused.message.contains("--media external"))

            let external = try Parleyd(["--media", "external"])
            let other = try ControlSession(external)
            let badPort = try other.error(.start(StartParams(to: "sip:nobody@127.0.0.1:9", media: MediaEndpointParams(port: 65_535))))
            #expect(badPort.code == "invalidParams" && badPort.field == "media.port", "\(badPort)")
            let badAddress = try other.error(
                .start(StartParams(to: "sip:nobody@127.0.0.1:9", media: MediaEndpointParams(address: "localhost", port: 5000))))
            #expect(badAddress.code == "invalidParams" && badAddress.field == "media.address", "\(badAddress)")
            for unusable in ["0.0.0.0", "::", "239.1.2.3", "ff02::1"] {
                let refusedAddress = try other.error(
                    .start(StartParams(to: "sip:nobody@127.0.0.1:9", media: MediaEndpointParams(address: unusable, port: 5000))))
                #expect(refusedAddress.field == "media.address", "\(unusable): \(refusedAddress)")
            }
            let noCall = try other.error(.join(JoinParams(conversation: "00000000", media: MediaEndpointParams(port: 5000))))
            #expect(noCall.code == "notFound")
            let usage = try RunningProcess(
                try Interop.binary("parleyd"), ["--media", "external", "--audio-source", "silence", "--no-control", "--no-history"],
                name: "parleyd external with a source")
            #expect(try usage.waitForExit() == 64)
            #expect(usage.standardError.contains("go with --media gstreamer"))
        }
    }
}

/// The RTP figures of a call between two parleyd: the `mediaStats` method and event while it runs, the summary in
/// its history record after.
extension AudioInterop {
    @Suite("Interop: audio figures (RTCP) of a call", .serialized)
    struct MediaStatsInteropTests {
        @Test("mediaStats gives packets, loss, jitter and the round trip from the peer's RTCP; the record keeps them")
        func figuresDuringAndAfter() throws {
            let (callee, calleeFolder) = try AudioInteropTests.parleyd(tone: 440, ["--auto-answer", "0"])
            defer { try? FileManager.default.removeItem(at: calleeFolder) }
            let (caller, callerFolder) = try AudioInteropTests.parleyd(tone: 1_000, [])
            defer { try? FileManager.default.removeItem(at: callerFolder) }
            let control = try ControlSession(caller)
            _ = try control.request(.subscribe(SubscribeParams()))
            let started = try control.request(.start(StartParams(to: "sip:parley@127.0.0.1:\(callee.port)")))
            let uuid = try #require((started["conversation"] as? [String: Any])?["uuid"] as? String)
            let session = try #require(try control.nextMedia(of: uuid))
            #expect(session.telephoneEvent == 101 && session.localAddress == "127.0.0.1")

            // RTCP goes every 5 s or so (RFC 3550's minimum, randomised): wait for the peer's report on our stream.
            var figures: [String: Any] = [:]
            var last: [String: Any] = [:]
            let deadline = Date().addingTimeInterval(15)
            while Date() < deadline {
                let result = try control.request(.mediaStats(ConversationParams(conversation: uuid)))
                last = result
                #expect((result["media"] as? [String: Any])?["codec"] as? String == "PCMU")
                if let stats = result["stats"] as? [String: Any], stats["roundTripMs"] is Double {
                    figures = stats
                    break
                }
                Thread.sleep(forTimeInterval: 0.5)
            }
            let received = try #require(figures["packetsReceived"] as? Int, "no round trip within 15 s: \(last)")
            #expect(received >= 100 && (figures["packetsSent"] as? Int ?? 0) >= 100, "\(figures)")
            #expect((figures["lossPercent"] as? Double ?? 100) <= 1, "\(figures)")
            #expect((figures["jitterMs"] as? Double ?? 100) < 20, "\(figures)")
            #expect((figures["roundTripMs"] as? Double ?? 1_000) < 100, "loopback: \(figures)")
            #expect(figures["peerPacketsLost"] is Int && figures["peerJitterMs"] is Double, "\(figures)")
            #expect(try control.statsEvents(of: uuid) >= 1, "mediaStats events while the call runs")
            let cli = try RunningProcess(
                try Interop.binary("parley"), ["audio", String(uuid.prefix(8)), "--data-dir", caller.dataDirectory.path],
                name: "parley audio")
            #expect(try cli.waitForExit() == 0, "\(cli.standardError)")
            #expect(cli.lines.first?.hasPrefix("audio  PCMU 127.0.0.1:") == true, "\(cli.lines)")
            #expect(cli.lines.last?.contains("round trip") == true, "\(cli.lines)")

            _ = try control.request(.end(ConversationParams(conversation: uuid)))
            try caller.waitForEnded(1)
            let history = try control.request(.history(HistoryParams(limit: 1)))
            let record = try #require((history["records"] as? [[String: Any]])?.first)
            let quality = try #require(record["quality"] as? [String: Any], "the record keeps the figures: \(record)")
            #expect((quality["packetsReceived"] as? Int ?? 0) >= received, "\(quality)")
            #expect(quality["roundTripMs"] is Double && quality["codec"] as? String == "PCMU", "\(quality)")
        }
    }
}

/// A control connection to a test's parleyd, with its events kept apart from its answers.
final class ControlSession {
    private let client: ControlClient
    private var nextID = 0
    private var events: [ControlEventMessage] = []

    init(_ daemon: Parleyd) throws {
        let directory = daemon.dataDirectory.path
        client = try ControlClient(
            socketPath: directory + "/control.sock", token: try ControlToken.read(from: directory), timeout: 10)
    }

    deinit { client.close() }

    /// The result of `command` (an error answer fails the test's set-up).
    func request(_ command: ControlCommand) throws -> [String: Any] {
        let answer = try send(command)
        guard let result = answer["result"] as? [String: Any] else { throw InteropError("\(command): \(answer)") }
        return result
    }

    /// The error `command` is answered with.
    func error(_ command: ControlCommand) throws -> (code: String, message: String, field: String?) {
        let answer = try send(command)
        guard let error = answer["error"] as? [String: Any], let code = error["code"] as? String else {
            throw InteropError("\(command) was not refused: \(answer)")
        }
        let field = (error["details"] as? [String: Any])?["field"] as? String
        return (code, error["message"] as? String ?? "", field)
    }

    /// The next `mediaChanged` of `conversation` (events before it of other kinds are kept aside): its session, or
    /// nil when it says the call has none.
    func nextMedia(of conversation: String, timeout: TimeInterval = 10) throws -> MediaInfo? {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if let index = events.firstIndex(where: { event in
                if case .mediaChanged(let change) = event { return change.conversation.lowercased() == conversation.lowercased() }
                return false
            }) {
                guard case .mediaChanged(let change) = events.remove(at: index) else { break }
                return change.media
            }
            let line = try client.readLine(timeout: max(0.1, deadline.timeIntervalSinceNow))
            if let event = ControlEventMessage.decode(line) { events.append(event) }
        }
        throw InteropError("no mediaChanged for \(conversation) within \(timeout) s")
    }

    /// Every event that came (or comes within `timeout`) until `enough` says the collection is complete; the events
    /// taken are removed, the rest kept aside.
    func collect(
        timeout: TimeInterval = 20, _ take: (ControlEventMessage) -> Bool, until enough: ([ControlEventMessage]) -> Bool
    ) throws -> [ControlEventMessage] {
        let deadline = Date().addingTimeInterval(timeout)
        var taken: [ControlEventMessage] = []
        while true {
            taken += events.filter(take)
            events.removeAll(where: take)
            if enough(taken) { return taken }
            guard Date() < deadline else { throw InteropError("only \(taken.count) matching events within \(timeout) s") }
            let line = try client.readLine(timeout: max(0.1, deadline.timeIntervalSinceNow))
            if let event = ControlEventMessage.decode(line) { events.append(event) }
        }
    }

    /// How many `mediaStats` events of `conversation` came so far (read or kept aside).
    func statsEvents(of conversation: String) throws -> Int {
        events.filter { event in
            if case .mediaStats(let figures) = event { return figures.conversation.lowercased() == conversation.lowercased() }
            return false
        }.count
    }

    private func send(_ command: ControlCommand) throws -> [String: Any] {
        nextID += 1
        try client.send(ControlRequest(id: .number(nextID), command: command).encoded())
        while true {
            let line = try client.readLine(timeout: 10)
            if let event = ControlEventMessage.decode(line) {
                events.append(event)
                continue
            }
            let answer = try JSONSerialization.jsonObject(with: line) as? [String: Any] ?? [:]
            if answer["id"] as? Int == nextID { return answer }
        }
    }
}

/// A frontend's RTP socket on loopback: sends a G.711 µ-law tone as 20 ms packets, and decodes what arrives.
final class RTPFrontend: @unchecked Sendable {
    let port: Int
    private let socket: Int32

    init() throws {
        for _ in 0..<50 {
            let candidate = Int(Interop.freePorts(count: 2)) & ~1
            let fd = Glibc.socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
            var address = Self.loopback(candidate)
            let bound = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            if bound == 0 {
                var timeout = timeval(tv_sec: 0, tv_usec: 100_000)
                setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
                port = candidate
                socket = fd
                return
            }
            close(fd)
        }
        throw InteropError("no free even RTP port")
    }

    deinit { close(socket) }

    private static func loopback(_ port: Int) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return address
    }

    /// Sends `hertz` to 127.0.0.1:`port` for `seconds`, paced in real time (a softphone's sender).
    func sendTone(_ hertz: Double, to port: Int, seconds: Double) {
        var destination = Self.loopback(port)
        let ssrc = UInt32.random(in: 1...UInt32.max)
        let start = Date()
        for packet in 0..<Int(seconds * 50) {
            var bytes: [UInt8] = [0x80, 0, UInt8(packet >> 8 & 0xFF), UInt8(packet & 0xFF)]
            bytes += withUnsafeBytes(of: UInt32(packet * 160).bigEndian, Array.init)
            bytes += withUnsafeBytes(of: ssrc.bigEndian, Array.init)
            for index in 0..<160 {
                let time = Double(packet * 160 + index) / 8_000
                bytes.append(G711.ulaw(Int16(8_000 * sin(2 * .pi * hertz * time))))
            }
            _ = withUnsafePointer(to: &destination) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    sendto(socket, bytes, bytes.count, 0, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
            let due = start.addingTimeInterval(Double(packet + 1) * 0.02).timeIntervalSinceNow
            if due > 0 { Thread.sleep(forTimeInterval: due) }
        }
    }

    /// The datagrams that arrive for `seconds`, as they came.
    func receivePackets(seconds: Double) -> [[UInt8]] {
        var packets: [[UInt8]] = []
        var buffer = [UInt8](repeating: 0, count: 2_048)
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            let count = recv(socket, &buffer, buffer.count, 0)
            if count > 0 { packets.append(Array(buffer[0..<count])) }
        }
        return packets
    }

    /// What arrives for `seconds`, PCMU payloads in arrival order, as 8 kHz samples.
    func receive(seconds: Double) -> Recording {
        var samples: [Double] = []
        var buffer = [UInt8](repeating: 0, count: 2_048)
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            let count = recv(socket, &buffer, buffer.count, 0)
            guard count > 12, buffer[1] & 0x7F == 0 else { continue }
            let header = 12 + 4 * Int(buffer[0] & 0x0F)
            guard count > header else { continue }
            samples += buffer[header..<count].map { Double(G711.linear($0)) / 32_768 }
        }
        return Recording(sampleRate: 8_000, samples: samples)
    }
}

/// G.711 µ-law, the test's side (ITU-T G.711's segment encoding).
enum G711 {
    static func ulaw(_ sample: Int16) -> UInt8 {
        var magnitude = Int(sample)
        let sign = magnitude < 0 ? 0x80 : 0
        magnitude = min(abs(magnitude), 32_635) + 0x84
        var exponent = 7
        while exponent > 0, magnitude & (0x4000 >> (7 - exponent)) == 0 { exponent -= 1 }
        let mantissa = (magnitude >> (exponent + 3)) & 0x0F
        return ~UInt8(sign | exponent << 4 | mantissa)
    }

    static func linear(_ byte: UInt8) -> Int16 {
        let value = ~byte
        let exponent = Int(value >> 4 & 0x07)
        let magnitude = ((Int(value & 0x0F) << 3) + 0x84) << exponent - 0x84
        return Int16(value & 0x80 != 0 ? -magnitude : magnitude)
    }
}
