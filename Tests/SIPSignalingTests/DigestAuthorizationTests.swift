import Foundation
import SIPMessages
import SIPSignaling
import Testing

@Suite("Digest answers (RFC 2617 §3.2.2, RFC 7616 §3.4, RFC 8760)")
struct DigestAuthorizationTests {
    let hash = TestHashes.digest

    @Test("the test hashes give the standards' own answers (RFC 1321, FIPS 180-4 examples)")
    func hashVectors() {
        let long = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"
        let twoBlocks = "abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqr"
            + "lmnopqrsmnopqrstnopqrstu"
        #expect(hash(.md5, "") == "d41d8cd98f00b204e9800998ecf8427e")
        #expect(hash(.md5, "abc") == "900150983cd24fb0d6963f7d28e17f72")
        #expect(hash(.md5, String(repeating: "1234567890", count: 8)) == "57edf4a22be3c955ac49da2e2107b67a")
        #expect(hash(.sha256, "abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(hash(.sha256, long) == "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1")
        #expect(hash(.sha512_256, "abc") == "53048e2681941ef99b2e29b76b4c7dabe4c2d0c634fc6d46e0e2f13107e7af23")
        #expect(hash(.sha512_256, twoBlocks) == "3928e184fb8690f840da3988121d31be65cb9d3ef83ee6146feac861e19b563a")
    }

    @Test("RFC 2617 §3.5: Mufasa, MD5, qop auth, nc 00000001 gives 6629fae4…, in the header RFC 3261 expects")
    func rfc2617Example() throws {
        let challenge = try #require(try DigestChallenge.parse("""
            Digest realm="testrealm@host.com", qop="auth,auth-int", nonce="dcd98b7102dd2f0e8b11d0f600bfb0c093", \
            opaque="5ccc069c403ebaf9f0171e9517f40e41"
            """, origin: .server).challenges.first)
        var session = DigestSession()
        let answer = try session.authorize(
            method: SIPMethod("GET"), uri: "/dir/index.html", challenge: challenge,
            credentials: DigestCredentials(username: "Mufasa", password: "Circle Of Life"), cnonce: "0a4f113b", hash: hash)
        #expect(answer.response == "6629fae49393a05397450978507c4ef1")
        #expect(answer.headerName == "Authorization")
        #expect(answer.qop == .auth)
        #expect(answer.nonceCount == 1)
        #expect(answer.headerValue == """
            Digest username="Mufasa", realm="testrealm@host.com", nonce="dcd98b7102dd2f0e8b11d0f600bfb0c093", \
            uri="/dir/index.html", response="6629fae49393a05397450978507c4ef1", algorithm=MD5, cnonce="0a4f113b", \
            opaque="5ccc069c403ebaf9f0171e9517f40e41", qop=auth, nc=00000001
            """)
        // The answer reads back as a challenge-style list: the same grammar.
        #expect(throws: Never.self) { try DigestChallenge.parse(answer.headerValue, origin: .server) }
    }

    @Test("RFC 7616 §3.9.1: the same request answered with SHA-256 (753927fa…) and with MD5 (8ca523f5…)")
    func rfc7616Examples() throws {
        let base = """
            realm="http-auth@example.org", qop="auth, auth-int", nonce="7ypf/xlj9XXwfDPEoM4URrv/xwf94BcCAzFZH4GiTo0v", \
            opaque="FQhe/qaU925kfnzjCev0ciny7QMkPqMAFRtzCUYo5tdS"
            """
        let expected: [(String, String)] = [
            ("SHA-256", "753927fa0e85d155564e2e272a28d1802ca10daf4496794697cf8db5856cb6c1"),
            ("MD5", "8ca523f5e9506fed4657c9700eebdbec"),
        ]
        for (algorithm, response) in expected {
            let challenge = try #require(
                try DigestChallenge.parse("Digest \(base), algorithm=\(algorithm)", origin: .server).challenges.first)
            var session = DigestSession()
            let answer = try session.authorize(
                method: SIPMethod("GET"), uri: "/dir/index.html", challenge: challenge,
                credentials: DigestCredentials(username: "Mufasa", password: "Circle of Life"),
                cnonce: "f2/wE4q74E6zIJEtWaHKaf5wv/H5QzzpXusqGemxURZJ", hash: hash)
            #expect(answer.response == response)
            #expect(answer.headerValue.contains("algorithm=\(algorithm), "))
            #expect(answer.headerValue.contains(#"opaque="FQhe/qaU925kfnzjCev0ciny7QMkPqMAFRtzCUYo5tdS""#))
        }
    }

    /// RFC 7616 §3.9.2's inputs. Its printed username hash (488869…) and response (ae66e6…) cannot be reproduced from
    /// them (neither by OpenSSL nor here), so the expected values are OpenSSL 3's: `printf '%s' 'Jäsøn Doe:api@…' |
    /// openssl dgst -sha512-256`, and the response computed the same way step by step.
    @Test("RFC 7616 §3.9.2 inputs: SHA-512-256 with a hashed UTF-8 username (userhash=true)")
    func userhashExample() throws {
        let challenge = try #require(try DigestChallenge.parse("""
            Digest realm="api@example.org", qop="auth", algorithm=SHA-512-256, \
            nonce="5TsQWLVdgBdmrQ0XsxbDODV+57QdFR34I9HAbC/RVvkK", opaque="HRPCssKJSGjCrkzDg8OhwpzCiGPChXYjwrI2QmXDnsOS", \
            charset=UTF-8, userhash=true
            """, origin: .server).challenges.first)
        #expect(challenge.wantsUserhash)
        var session = DigestSession()
        let answer = try session.authorize(
            method: SIPMethod("GET"), uri: "/doe.json", challenge: challenge,
            credentials: DigestCredentials(username: "J\u{E4}s\u{F8}n Doe", password: "Secret, or not?"),
            cnonce: "NTg6RKcb9boFIAS3KrFK9BGeh+iDa/sm6jUMp2wds69v", hash: hash)
        #expect(answer.response == "3798d4131c277846293534c3edc11bd8a5e4cdcbff78b05db9d95eeb1cec68a5")
        #expect(answer.headerValue.hasPrefix(
            #"Digest username="793263caabb707a56211940d90411ea4a575adeccb7e360aeb624ed06ece9b0b", "#))
        #expect(answer.headerValue.contains("algorithm=SHA-512-256, "))
        #expect(answer.headerValue.hasSuffix(", userhash=true"))
    }

    @Test("nonce counts go up per nonce, restart with a new nonce, and are kept per realm and origin")
    func nonceCounts() throws {
        let credentials = DigestCredentials(username: "bob", password: "zanzibar")
        let register = Fixture.request(.register)
        var session = DigestSession()
        let first = DigestChallenge(origin: .server, realm: "biloxi.com", nonce: "n1")
        let proxy = DigestChallenge(origin: .proxy, realm: "biloxi.com", nonce: "n1")
        func count(_ challenge: DigestChallenge) throws -> UInt32? {
            try session.authorize(register, challenge: challenge, credentials: credentials, cnonce: "c", hash: hash)
                .nonceCount
        }
        #expect(try count(first) == 1)
        #expect(try count(first) == 2)
        #expect(try count(proxy) == 1)
        #expect(session.nonceCount(origin: .server, realm: "biloxi.com", nonce: "n1") == 2)
        var stale = first
        stale.nonce = "n2"
        stale.isStale = true
        #expect(try count(stale) == 1)
        #expect(session.nonceCount(origin: .server, realm: "biloxi.com", nonce: "n1") == 0)
        let answer = try session.authorize(register, challenge: stale, credentials: credentials, cnonce: "c", hash: hash)
        #expect(answer.headerValue.contains("nc=00000002"))
        #expect(answer.headerValue.contains(#"uri="sip:bob@biloxi.example.com""#))
        #expect(answer.headerValue.hasPrefix(#"Digest username="bob", realm="biloxi.com", nonce="n2", "#))
    }

    @Test("formulas: RFC 2069 without qop, -sess session keys, auth-int over the body; quotes in values escaped")
    func formulas() throws {
        let credentials = DigestCredentials(username: #"a"b\c"#, password: "p")
        let body = Data("v=0\r\n".utf8)
        var session = DigestSession()
        func h(_ text: String) -> String { hash(.sha256, text) }

        let legacy = DigestChallenge(origin: .proxy, realm: "r", nonce: "n", opaque: "o", qopOptions: nil)
        let old = try session.authorize(
            method: .invite, uri: "sip:x@y", challenge: legacy, credentials: credentials, cnonce: "c", hash: hash)
        #expect(old.response == hash(.md5, hash(.md5, #"a"b\c:r:p"#) + ":n:" + hash(.md5, "INVITE:sip:x@y")))
        #expect(old.headerValue == #"Digest username="a\"b\\c", realm="r", nonce="n", uri="sip:x@y", "#
            + #"response="\#(old.response)", algorithm=MD5, opaque="o""#)
        #expect(old.nonceCount == nil && old.qop == nil)

        let sess = DigestChallenge(origin: .server, realm: "r", nonce: "n", algorithm: .sha256Session)
        let keyed = try session.authorize(
            method: .invite, uri: "sip:x@y", challenge: sess, credentials: credentials, cnonce: "c", hash: hash)
        let a1 = h(h(#"a"b\c:r:p"#) + ":n:c")
        #expect(keyed.response == h(a1 + ":n:00000001:c:auth:" + h("INVITE:sip:x@y")))

        let integrity = DigestChallenge(
            origin: .server, realm: "r", nonce: "n2", algorithm: .sha256, qopOptions: [.authInt])
        let whole = try session.authorize(
            method: .invite, uri: "sip:x@y", body: body, challenge: integrity, credentials: credentials, cnonce: "c",
            hash: hash)
        #expect(whole.qop == .authInt)
        #expect(whole.response == h(h(#"a"b\c:r:p"#) + ":n2:00000001:c:auth-int:" + h("INVITE:sip:x@y:" + h("v=0\r\n"))))
        #expect(throws: DigestAuthorizationError.bodyNotText) {
            try session.authorize(
                method: .invite, uri: "sip:x@y", body: Data([0xFF, 0xFE]), challenge: integrity,
                credentials: credentials, cnonce: "c", hash: hash)
        }
    }
}
