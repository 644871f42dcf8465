import ConversationKit
import Foundation
import Testing

@testable import VoIPPush

/// Messages to JSON and back, and the errors for frames that are not messages.
@Suite("codec")
struct CodecTests {
    static let start = Date(timeIntervalSince1970: 1_767_225_600.125)

    static let payload = PushPayload(
        uuid: UUID(uuidString: "E621E1F8-C36C-495A-93FC-0C247A3E6E5F")!,
        handle: Handle(kind: .generic, value: "sip:alice@127.0.0.1:5062", displayName: "Alice"),
        callID: "call-1@127.0.0.1", isVideo: true, sentAt: start, expiresAt: start.addingTimeInterval(30))

    static let messages: [PushMessage] = [
        .register(token: "device-1"),
        .registered(PushRegistration(token: "device-1", strikes: 2, disabled: true)),
        .push(PushDelivery(id: "p1", token: "device-1", payload: payload, collapseID: "c1")),
        .push(PushDelivery(id: "p2", token: "device-1", payload: {
            var cancel = payload
            cancel.cancel = true
            cancel.handle = Handle(kind: .phoneNumber, value: "+14155550100")
            return cancel
        }())),
        .ack(pushID: "p1", .reported),
        .ack(pushID: "p2", .notReported("no engine")),
        .send(PushSendRequest(token: "device-1", payload: payload, collapseID: "c", expiration: 12.5)),
        .send(PushSendRequest(token: "device-1", payload: payload)),
        .outcome(PushOutcome(token: "t", pushID: "p1", result: .delivered, reported: false, detail: "strike 1/3")),
        .outcome(PushOutcome(token: "t", result: .unknownToken, detail: "never registered")),
        .status,
        .statusReport(PushStatusReport(
            devices: [PushStatusReport.Device(token: "a", connected: true, strikes: 1, disabled: false, queued: 3)],
            counters: { var counters = PushCounters(); counters.pushed = 4; counters.strikes = 1; return counters }())),
        .error(PushFault(code: .badField, message: "payload.handle.kind: nope", path: "payload.handle.kind")),
        .error(PushFault(code: PushFault.Code(rawValue: "somethingNewer"), message: "from the future")),
    ]

    func decode(_ json: String) throws(PushFault) -> PushMessage {
        try PushCodec.decode(Data(json.utf8))
    }

    func fault(_ json: String) -> PushFault? {
        do {
            _ = try decode(json)
            return nil
        } catch {
            return error
        }
    }

    @Test("every message survives a round trip", arguments: messages)
    func roundTrip(_ message: PushMessage) throws {
        let data = PushCodec.encode(message)
        #expect(try PushCodec.decode(data) == message)
        let object = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        #expect(object["v"] as? Int == 1)
        #expect(object["type"] as? String == message.kind.rawValue)
    }

    @Test("the wire form: v, type, members side by side; ISO-8601 dates with milliseconds")
    func wireForm() throws {
        #expect(String(decoding: PushCodec.encode(.register(token: "d1")), as: UTF8.self) == #"{"token":"d1","type":"register","v":1}"#)
        #expect(String(decoding: PushCodec.encode(.ack(pushID: "p9", .reported)), as: UTF8.self) == #"{"id":"p9","reported":true,"type":"ack","v":1}"#)
        #expect(String(decoding: PushCodec.encode(.status), as: UTF8.self) == #"{"type":"status","v":1}"#)
        let push = String(decoding: PushCodec.encode(.push(PushDelivery(id: "p1", token: "d", payload: Self.payload))), as: UTF8.self)
        #expect(push.contains(#""sentAt":"2026-01-01T00:00:00.125Z""#))
        #expect(push.contains(#""expiresAt":"2026-01-01T00:00:30.125Z""#))
        #expect(push.contains(#""handle":{"displayName":"Alice","kind":"generic","value":"sip:alice@127.0.0.1:5062"}"#))
        #expect(push.contains(#""uuid":"E621E1F8-C36C-495A-93FC-0C247A3E6E5F""#))
        #expect(push.contains(#""cancel":false"#))
        #expect(!push.contains("collapseID"))
    }

    @Test("optional members: isVideo, cancel and displayName default; dates without fraction are read")
    func defaults() throws {
        let message = try decode("""
            {"v":1,"type":"push","id":"p1","token":"d","payload":{"uuid":"e621e1f8-c36c-495a-93fc-0c247a3e6e5f",
             "handle":{"kind":"emailAddress","value":"bob@example.com"},"callID":"c","sentAt":"2026-01-01T00:00:00Z",
             "expiresAt":"2026-01-01T00:00:30.5Z"},"extra":"ignored"}
            """)
        guard case .push(let delivery) = message else { Issue.record("not a push: \(message)"); return }
        #expect(delivery.payload.isVideo == false)
        #expect(delivery.payload.cancel == false)
        #expect(delivery.payload.handle == Handle(kind: .emailAddress, value: "bob@example.com"))
        #expect(delivery.payload.uuid.uuidString == "E621E1F8-C36C-495A-93FC-0C247A3E6E5F")
        #expect(delivery.payload.sentAt == Date(timeIntervalSince1970: 1_767_225_600))
        #expect(delivery.payload.expiresAt == Date(timeIntervalSince1970: 1_767_225_630.5))
        #expect(delivery.collapseID == nil)
    }

    @Test("dates: rounded to the millisecond, and stable once rounded")
    func dates() throws {
        var seed: UInt64 = 0x9E37_79B9_7F4A_7C15
        for _ in 0..<2000 {
            seed = seed &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            let date = Date(timeIntervalSince1970: 1_700_000_000 + Double(seed % 200_000_000_000) / 1_000_000)
            let text = WireDate.text(date)
            let back = try #require(WireDate.parse(text))
            #expect(abs(back.timeIntervalSince(date)) <= 0.0005 + 1e-6, "\(date.timeIntervalSince1970) → \(text)")
            #expect(WireDate.text(back) == text)
            #expect(WireDate.parse(WireDate.text(back)) == back)
        }
        #expect(WireDate.text(Date(timeIntervalSince1970: 1_795_973_918.056)) == "2026-11-29T17:38:38.056Z")
        #expect(WireDate.text(Date(timeIntervalSince1970: 1_767_225_599.9996)) == "2026-01-01T00:00:00.000Z")
        #expect(WireDate.text(Date(timeIntervalSince1970: -0.25)) == "1969-12-31T23:59:59.750Z")
        #expect(WireDate.parse("2026-01-01T00:00:00Z") == Date(timeIntervalSince1970: 1_767_225_600))
        #expect(WireDate.parse("2026-01-01") == nil)
    }

    @Test("malformed JSON, empty frames and non-objects")
    func malformed() {
        let truncated = fault(#"{"v":1,"type":"status""#)
        #expect(truncated?.code == .malformedJSON)
        #expect(truncated?.message.hasPrefix("not JSON: ") == true)
        let broken = fault(#"{"v":1,,"type":"status"}"#)
        #expect(broken?.code == .malformedJSON)
        #expect(broken?.message.contains("line 1, column 8") == true, "\(String(describing: broken))")
        #expect(fault("")?.code == .malformedJSON)
        #expect(fault("")?.message == "empty frame (expected a JSON object)")
        #expect(fault("[1,2]")?.code == .malformedJSON)
        #expect(fault("\"text\"")?.code == .malformedJSON)
        #expect(fault("{\"v\":1,\"type\":\"status\"} trailing")?.code == .malformedJSON)
        let notUTF8 = try? PushCodec.decode(Data([0x7B, 0xFF, 0xFE, 0x7D]))
        #expect(notUTF8 == nil)
    }

    @Test("versions: missing, unsupported (naming version 1), not a number")
    func versions() {
        #expect(fault(#"{"type":"status"}"#) == PushFault(code: .badField, message: #"v: missing (every message carries "v": 1)"#, path: "v"))
        let two = fault(#"{"v":2,"type":"status"}"#)
        #expect(two?.code == .unsupportedVersion)
        #expect(two?.message == "version 2 is not supported (supported: 1)")
        #expect(fault(#"{"v":"1","type":"status"}"#)?.code == .unsupportedVersion)
    }

    @Test("types: missing, unknown (listing the known ones)")
    func types() {
        #expect(fault(#"{"v":1}"#) == PushFault(code: .badField, message: "type: missing", path: "type"))
        let unknown = fault(#"{"v":1,"type":"launch"}"#)
        #expect(unknown?.code == .unknownType)
        #expect(unknown?.message.contains("'launch'") == true)
        #expect(unknown?.message.contains("register, registered, push, ack, send") == true)
        #expect(fault(#"{"v":1,"type":5}"#)?.path == "type")
        let long = fault(#"{"v":1,"type":""# + String(repeating: "z", count: 60_000) + #""}"#)
        #expect(long.map { $0.message.utf8.count < 300 } == true)
        #expect(long?.message.contains("zzz…'") == true)
    }

    @Test("bad members are named by their JSON path")
    func paths() throws {
        let good = String(decoding: PushCodec.encode(.send(PushSendRequest(token: "d", payload: Self.payload))), as: UTF8.self)
        func mutated(_ from: String, _ to: String) -> PushFault? {
            #expect(good.contains(from), "fixture lacks \(from)")
            return fault(good.replacingOccurrences(of: from, with: to))
        }
        let kind = mutated(#""kind":"generic""#, #""kind":"fax""#)
        #expect(kind?.code == .badField)
        #expect(kind?.path == "payload.handle.kind")
        #expect(kind?.message.hasPrefix("payload.handle.kind: unknown handle kind 'fax'") == true)
        #expect(mutated(#""kind":"generic""#, #""kind":2"#)?.path == "payload.handle.kind")
        #expect(mutated(#","value":"sip:alice@127.0.0.1:5062""#, "")?.message == "payload.handle.value: missing")
        let date = mutated(#""sentAt":"2026-01-01T00:00:00.125Z""#, #""sentAt":"yesterday""#)
        #expect(date?.path == "payload.sentAt")
        #expect(date?.message.contains("not an ISO-8601 date: 'yesterday'") == true)
        #expect(mutated(#""uuid":"E621E1F8-C36C-495A-93FC-0C247A3E6E5F""#, #""uuid":"nope""#)?.path == "payload.uuid")
        let video = mutated(#""isVideo":true"#, #""isVideo":"yes""#)
        #expect(video?.path == "payload.isVideo")
        #expect(video?.message == "payload.isVideo: expected a boolean")
        #expect(mutated(#""token":"d""#, #""token":null"#)?.path == "token")
        #expect(mutated(#""callID":"call-1@127.0.0.1""#, #""callID":7"#)?.message == "payload.callID: expected a string")
        #expect(mutated(#""handle":{"#, #""handle":"alice","ignored":{"#)?.path == "payload.handle")
        #expect(fault(#"{"v":1,"type":"send","token":"d"}"#)?.message == "payload: missing")
        #expect(fault(#"{"v":1,"type":"ack","id":"p1"}"#)?.path == "reported")
        #expect(fault(#"{"v":1,"type":"register"}"#)?.path == "token")
        let result = fault(#"{"v":1,"type":"outcome","token":"t","result":"lost","detail":"d"}"#)
        #expect(result?.path == "result")
        let device = fault(#"{"v":1,"type":"statusReport","devices":[{"token":"a"}],"counters":{}}"#)
        #expect(device?.path == "devices[0].connected")
    }

    @Test("endpoints parse IPv4, bracketed IPv6 and localhost; nothing else")
    func endpoints() {
        #expect(PushEndpoint("127.0.0.1:5070")?.description == "127.0.0.1:5070")
        #expect(PushEndpoint("[::1]:5070")?.host == "::1")
        #expect(PushEndpoint("[::1]:5070")?.description == "[::1]:5070")
        #expect(PushEndpoint("localhost:1")?.host == "127.0.0.1")
        for bad in ["127.0.0.1", "127.0.0.1:", "127.0.0.1:70000", "::1:5070", "[::1]5070", "example.com:5070", ":5070", "1.2.3.4:-1"] {
            #expect(PushEndpoint(bad) == nil, "\(bad)")
        }
    }

    @Test("back-off doubles from 0.2 s up to 5 s")
    func backoff() {
        let backoff = PushBackoff()
        let delays = (1...8).map { backoff.delay(afterFailures: $0) }
        #expect(delays.map { ($0 * 1000).rounded() } == [200, 400, 800, 1600, 3200, 5000, 5000, 5000])
        #expect(backoff.delay(afterFailures: 10_000) == 5)
    }
}
