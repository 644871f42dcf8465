import Foundation
import SIPMessages
import SIPSignaling
import Testing

@Suite("Digest challenges (RFC 2617 §3.2.1, RFC 7616 §3.3, RFC 8760)")
struct DigestChallengeTests {
    @Test("the RFC 7616 §3.9.1 challenge: realm, qop list, algorithm, nonce, opaque")
    func rfc7616Challenge() throws {
        let value = """
            Digest realm="http-auth@example.org", qop="auth, auth-int", algorithm=SHA-256, \
            nonce="7ypf/xlj9XXwfDPEoM4URrv/xwf94BcCAzFZH4GiTo0v", opaque="FQhe/qaU925kfnzjCev0ciny7QMkPqMAFRtzCUYo5tdS"
            """
        let parsed = try DigestChallenge.parse(value, origin: .server)
        #expect(parsed.ignored.isEmpty)
        #expect(parsed.challenges == [DigestChallenge(
            origin: .server, realm: "http-auth@example.org", nonce: "7ypf/xlj9XXwfDPEoM4URrv/xwf94BcCAzFZH4GiTo0v",
            opaque: "FQhe/qaU925kfnzjCev0ciny7QMkPqMAFRtzCUYo5tdS", algorithm: .sha256, qopOptions: [.auth, .authInt])])
    }

    @Test("names and tokens are case-insensitive; no algorithm means MD5; no qop means RFC 2069; stale and userhash")
    func defaultsAndFlags() throws {
        let challenge = try #require(try DigestChallenge.parse(
            #"DIGEST REALM="atlanta.example.com", Nonce=84f1c1ae6cbe5ua9, Stale=TRUE, userhash=true"#,
            origin: .proxy).challenges.first)
        #expect(challenge.realm == "atlanta.example.com")
        #expect(challenge.nonce == "84f1c1ae6cbe5ua9")
        #expect(challenge.algorithm == .md5)
        #expect(challenge.qopOptions == nil)
        #expect(challenge.isStale)
        #expect(challenge.wantsUserhash)
        #expect(challenge.opaque == nil)
        #expect(challenge.origin.authorizationHeaderName == "Proxy-Authorization")
        let sessValue = #"Digest realm="r", nonce="n", algorithm=md5-SESS, qop=auth"#
        let sess = try DigestChallenge.parse(sessValue, origin: .server)
        #expect(sess.challenges.first?.algorithm == .md5Session)
        #expect(sess.challenges.first?.qopOptions == [.auth])
    }

    @Test("quoted strings keep commas and equals signs, and unescape backslashes")
    func quotedStrings() throws {
        let value = #"Digest realm="a \"quoted\", realm=x \\ here", nonce="n,=1", domain="sip:a sip:b""#
        let challenge = try #require(try DigestChallenge.parse(value, origin: .server).challenges.first)
        #expect(challenge.realm == #"a "quoted", realm=x \ here"#)
        #expect(challenge.nonce == "n,=1")
    }

    @Test("several challenges in one value and several schemes: Basic and Bearer are skipped")
    func severalChallenges() throws {
        let value = """
            Basic realm="legacy", Digest realm="one", nonce="1", algorithm=SHA-256, qop="auth", \
            Bearer mF_9.B5f-4.1JqM/abc==, Digest realm="two", nonce="2",, Newauth
            """
        let parsed = try DigestChallenge.parse(value, origin: .server)
        #expect(parsed.challenges.map(\.realm) == ["one", "two"])
        #expect(parsed.challenges.map(\.algorithm) == [.sha256, .md5])
    }

    @Test("malformed values are errors, not crashes: unclosed quotes, stray text, parameters before a scheme")
    func malformed() {
        let cases: [(String, DigestChallengeError)] = [
            (#"Digest realm="open, nonce=1"#, .syntax(reason: "a quoted string is not closed", offset: 13)),
            (#"Digest realm="r" nonce="1""#, .syntax(reason: "expected a comma after a parameter", offset: 17)),
            (#"realm="r", Digest nonce="1""#, .syntax(reason: "a parameter comes before any scheme", offset: 0)),
            (#"Digest realm="r", nonce=@x"#, .syntax(reason: "expected a token or a quoted string", offset: 24)),
            ("Digest realm=\"a\\", .syntax(reason: "a backslash must escape a character", offset: 16)),
            (#"Digest @realm="r""#, .syntax(reason: "expected a scheme or a parameter name", offset: 7)),
        ]
        for (value, expected) in cases {
            #expect(throws: expected, "\(value)") { try DigestChallenge.parse(value, origin: .server) }
        }
    }

    @Test("challenges that read but cannot be answered come back as reasons")
    func ignoredChallenges() throws {
        let value = """
            Digest nonce="1", Digest realm="r", Digest realm="r", nonce="2", algorithm=SHA3-256, \
            Digest realm="r", nonce="3", qop="auth-conf", Digest realm="r", nonce="4", nonce="5", \
            Digest realm="r", nonce="6", algorithm=SHA-256-sess
            """
        let parsed = try DigestChallenge.parse(value, origin: .server)
        #expect(parsed.challenges.isEmpty)
        #expect(parsed.ignored == [
            .missingParameter("realm"), .missingParameter("nonce"), .unsupportedAlgorithm("SHA3-256"),
            .unsupportedQop("auth-conf"), .duplicateParameter("nonce"), .sessionAlgorithmWithoutQop("SHA-256-sess"),
        ])
        // An empty value reads as a token68 after the scheme (RFC 7235 grammar), so realm is missing.
        let empty = try DigestChallenge.parse(#"Digest realm=, nonce="1""#, origin: .server)
        #expect(empty.ignored == [.missingParameter("realm")])
        #expect(DigestChallengeError.unsupportedAlgorithm("SHA3-256").description
            == "unsupported Digest algorithm SHA3-256")
    }

    @Test("from a response: the strongest algorithm per realm, over several header lines, topmost among equals")
    func preferredInResponse() throws {
        let register = Fixture.request(.register)
        let response = register.makeResponse(statusCode: 401, toTag: "x", headers: [
            "WWW-Authenticate": #"Digest realm="biloxi", nonce="m1", algorithm=MD5, qop="auth""#,
            "WWW-Authenticate": #"Digest realm="biloxi", nonce="s1", algorithm=SHA-256, qop="auth", "#
                + #"Digest realm="biloxi", nonce="s2", algorithm=SHA-256-sess, qop="auth""#,
            "WWW-Authenticate": #"Digest realm="biloxi", nonce="x", algorithm=SHA-512-256, qop="auth"#,  // broken
            "WWW-Authenticate": #"Digest realm="other", nonce="o1""#,
            "Proxy-Authenticate": #"Digest realm="biloxi", nonce="p1", algorithm=SHA-512-256, qop="auth""#,
        ])
        let chosen = try DigestChallenge.preferred(in: response)
        #expect(chosen.map(\.nonce) == ["s1", "o1", "p1"])
        #expect(chosen.map(\.origin) == [.server, .server, .proxy])
        #expect(chosen.map(\.algorithm) == [.sha256, .md5, .sha512_256])
    }

    @Test("from a response with nothing to answer: the syntax error first, else the reason, else noDigestChallenge")
    func nothingToAnswer() {
        let register = Fixture.request(.register)
        let broken = register.makeResponse(statusCode: 407, toTag: "x", headers: [
            "Proxy-Authenticate": #"Digest realm="r", nonce="n", algorithm=AKAv1-MD5"#,
            "Proxy-Authenticate": #"Digest realm="r"#,
        ])
        #expect(throws: DigestChallengeError.syntax(reason: "a quoted string is not closed", offset: 13)) {
            try DigestChallenge.preferred(in: broken)
        }
        let unknown = register.makeResponse(statusCode: 401, toTag: "x", headers: [
            "WWW-Authenticate": #"Digest realm="r", nonce="n", algorithm=AKAv1-MD5"#,
        ])
        #expect(throws: DigestChallengeError.unsupportedAlgorithm("AKAv1-MD5")) {
            try DigestChallenge.preferred(in: unknown)
        }
        let basic = register.makeResponse(statusCode: 401, toTag: "x", headers: ["WWW-Authenticate": #"Basic realm="r""#])
        #expect(throws: DigestChallengeError.noDigestChallenge) { try DigestChallenge.preferred(in: basic) }
    }
}
