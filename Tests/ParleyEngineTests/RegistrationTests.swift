import ConversationKit
import Foundation
import ParleyEngine
import SIPMessages
import SIPSignaling
import ParleyIO
import SIPTransport
import Testing

@Suite("Engine: registration with digest authentication")
struct RegistrationTests {
    static func harness(password: String = "secret", expires: Int = 600) throws -> EngineHarness {
        let harness = try EngineHarness {
            $0.registration = RegistrationConfiguration(
                registrar: SIPURI("sip:127.0.0.1:5062")!, addressOfRecord: SIPURI("sip:alice@parley.test")!,
                credentials: DigestCredentials(username: "alice", password: password), expires: expires)
        }
        harness.engine.start()
        return harness
    }

    static func challenge(_ request: SIPRequest, algorithm: String, nonce: String) -> String {
        PeerMessages.response(401, "Unauthorized", to: request)
            + "\nWWW-Authenticate: Digest realm=\"parley.test\", nonce=\"\(nonce)\", algorithm=\(algorithm), qop=\"auth\""
    }

    /// The Authorization parameters of a request, unquoted.
    static func parameters(_ request: SIPRequest) throws -> [String: String] {
        let value = try #require(request.headers["Authorization"])
        #expect(value.hasPrefix("Digest "))
        var result: [String: String] = [:]
        for part in value.dropFirst("Digest ".count).split(separator: ",") {
            let pair = part.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            guard pair.count == 2 else { continue }
            result[pair[0]] = pair[1].trimmingCharacters(in: CharacterSet(charactersIn: "\""))
        }
        return result
    }

    @Test("a challenge is answered per RFC 2617/8760, the binding is refreshed before it expires", arguments: [
        ("MD5", { (text: String) in MessageDigest.md5(Data(text.utf8)) } as @Sendable (String) -> String),
        ("SHA-256", { (text: String) in MessageDigest.sha256(Data(text.utf8)) } as @Sendable (String) -> String),
    ])
    func answeredChallenge(algorithm: String, hash: @Sendable (String) -> String) throws {
        let harness = try Self.harness()
        let first = try #require(harness.sent().first?.request)
        #expect(first.method == .register)
        #expect(first.uri.description == "sip:127.0.0.1:5062")
        #expect(first.headers.to?.uri.description == "sip:alice@parley.test")
        #expect(first.headers["Expires"] == "600")
        harness.deliver(Self.challenge(first, algorithm: algorithm, nonce: "n-1"))
        let second = try #require(harness.sent().first?.request)
        #expect(second.headers.callID == first.headers.callID)
        #expect(second.headers.cseq!.number == first.headers.cseq!.number + 1)
        let auth = try Self.parameters(second)
        #expect(auth["username"] == "alice")
        #expect(auth["realm"] == "parley.test")
        #expect(auth["uri"] == "sip:127.0.0.1:5062")
        #expect(auth["algorithm"] == algorithm)
        #expect(auth["nc"] == "00000001")
        let cnonce = try #require(auth["cnonce"])
        let ha1 = hash("alice:parley.test:secret")
        let ha2 = hash("REGISTER:sip:127.0.0.1:5062")
        #expect(auth["response"] == hash("\(ha1):n-1:00000001:\(cnonce):auth:\(ha2)"))
        #expect(harness.engine.registrationState == .registering)

        harness.deliver(PeerMessages.response(200, "OK", to: second) + "\nExpires: 120")
        guard case .registered = harness.engine.registrationState else {
            Issue.record("not registered: \(harness.engine.registrationState)")
            return
        }
        harness.environment.advance(by: .seconds(87))
        #expect(harness.sent().isEmpty)
        harness.environment.advance(by: .seconds(1))
        let refresh = try #require(harness.sent().first?.request)
        #expect(refresh.method == .register, "refreshed 32 s before the 120 s binding expires")
        #expect(refresh.headers.callID == first.headers.callID)
    }

    @Test("wrong credentials: the same nonce challenged again ends the attempt, without a retry storm")
    func wrongCredentials() throws {
        let harness = try Self.harness(password: "wrong")
        let first = try #require(harness.sent().first?.request)
        harness.deliver(Self.challenge(first, algorithm: "MD5", nonce: "n-1"))
        let second = try #require(harness.sent().first?.request)
        harness.deliver(Self.challenge(second, algorithm: "MD5", nonce: "n-1"))
        #expect(harness.sent().isEmpty)
        guard case .failed(let reason) = harness.engine.registrationState else {
            Issue.record("expected a failure, got \(harness.engine.registrationState)")
            return
        }
        #expect(reason.contains("credentials refused"))
        harness.environment.advance(by: .seconds(600))
        #expect(harness.sent().isEmpty, "a refusal of the credentials is not retried")
    }

    @Test("no answer from the registrar: retried with a growing back-off")
    func backOff() throws {
        let harness = try Self.harness()
        _ = harness.sent()
        harness.environment.advance(by: .seconds(32))
        guard case .failed = harness.engine.registrationState else {
            Issue.record("expected a failure after timer F, got \(harness.engine.registrationState)")
            return
        }
        _ = harness.sent()
        harness.environment.advance(by: .seconds(10))
        #expect(harness.sent().first?.request?.method == .register)
    }

    @Test("RFC 8599: the Contact of every REGISTER (first, challenged, refreshed) carries pn-provider, pn-prid, pn-param as URI parameters")
    func pushContactParameters() throws {
        let harness = try EngineHarness {
            $0.registration = RegistrationConfiguration(
                registrar: SIPURI("sip:127.0.0.1:5062")!, addressOfRecord: SIPURI("sip:alice@parley.test")!,
                credentials: DigestCredentials(username: "alice", password: "secret"), expires: 600,
                contactParameters: [
                    SIPParameter(name: "pn-provider", value: "parley-sim"), SIPParameter(name: "pn-prid", value: "tok-alice"),
                    SIPParameter(name: "pn-param", value: "127.0.0.1.7000"),
                ])
        }
        harness.engine.start()
        func check(_ request: SIPRequest) throws {
            let contact = try #require(request.headers.contacts.first)
            #expect(contact.uri.parameters["pn-provider"] == "parley-sim")
            #expect(contact.uri.parameters["pn-prid"] == "tok-alice")
            #expect(contact.uri.parameters["pn-param"] == "127.0.0.1.7000")
            #expect(contact.parameters["pn-prid"] == nil, "URI parameters, inside <…>, so the registrar stores them with the binding")
            #expect(contact.parameters["expires"] == "600")
        }
        let first = try #require(harness.sent().first?.request)
        try check(first)
        harness.deliver(Self.challenge(first, algorithm: "MD5", nonce: "n-1"))
        let second = try #require(harness.sent().first?.request)
        try check(second)
        harness.deliver(PeerMessages.response(200, "OK", to: second) + "\nExpires: 120")
        harness.environment.advance(by: .seconds(88))
        try check(try #require(harness.sent().first?.request))
    }

    @Test("without push, the Contact has no pn-* parameters")
    func plainContact() throws {
        let harness = try Self.harness()
        let first = try #require(harness.sent().first?.request)
        let contact = try #require(first.headers.contacts.first)
        #expect(!contact.uri.parameters.contains { $0.name.hasPrefix("pn-") })
    }

    @Test("423 Interval Too Brief: asked again with the registrar's minimum")
    func intervalTooBrief() throws {
        let harness = try Self.harness(expires: 60)
        let first = try #require(harness.sent().first?.request)
        harness.deliver(PeerMessages.response(423, "Interval Too Brief", to: first) + "\nMin-Expires: 300")
        let second = try #require(harness.sent().first?.request)
        #expect(second.headers["Expires"] == "300")
    }
}
