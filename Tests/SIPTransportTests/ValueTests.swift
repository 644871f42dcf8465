import Dispatch
import Foundation
import Synchronization
import Testing

@testable import SIPTransport
@testable import ParleyIO
import ParleyTestSupport

@Suite("Listen addresses, transport kinds, digests and random tokens")
struct ValueTests {
    @Test("good listen addresses parse and print back the same")
    func goodAddresses() throws {
        let cases: [(String, SIPTransportKind, String, UInt16, String)] = [
            ("udp://127.0.0.1:5070", .udp, "127.0.0.1", 5070, "udp://127.0.0.1:5070"),
            ("tcp://[::1]:5070", .tcp, "::1", 5070, "tcp://[::1]:5070"),
            ("tls://127.0.0.1:5071", .tls, "127.0.0.1", 5071, "tls://127.0.0.1:5071"),
            ("TLS://0.0.0.0:0", .tls, "0.0.0.0", 0, "tls://0.0.0.0:0"),
            ("udp://[0:0:0::1]:65535", .udp, "::1", 65535, "udp://[::1]:65535"),
            ("tcp://[::]:5060", .tcp, "::", 5060, "tcp://[::]:5060"),
        ]
        for (input, kind, host, port, printed) in cases {
            let address = try ListenAddress(parsing: input)
            #expect(address == ListenAddress(kind: kind, host: host, port: port), "\(input)")
            #expect(address.description == printed)
            #expect(try ListenAddress(parsing: address.description) == address)
        }
    }

    @Test("bad listen addresses are refused with a reason that says what is wrong")
    func badAddresses() {
        let cases: [(String, String)] = [
            ("127.0.0.1:5060", "expected scheme://host:port"),
            ("sctp://127.0.0.1:5060", "unknown scheme 'sctp'"),
            ("udp://localhost:5060", "not a numeric IPv4 address"),
            ("udp://::1:5060", "must be written in brackets"),
            ("udp://[::1]", "missing ':port'"),
            ("udp://[::1:5060", "without closing ']'"),
            ("udp://[127.0.0.1]:5060", "not a numeric IPv6 address"),
            ("udp://127.0.0.1", "missing ':port'"),
            ("udp://127.0.0.1:", "port '' is not a number"),
            ("udp://127.0.0.1:70000", "port '70000' is not a number from 0 to 65535"),
            ("udp://127.0.0.1:-1", "port '-1'"),
            ("udp://127.0.0.1:50x", "port '50x'"),
            ("udp://:5060", "missing host"),
            ("udp://256.1.1.1:5060", "not a numeric IPv4 address"),
        ]
        for (input, reason) in cases {
            do {
                let address = try ListenAddress(parsing: input)
                Issue.record("\(input) parsed as \(address)")
            } catch {
                guard case .invalidListenAddress(let text, _) = error else {
                    Issue.record("\(input): \(error)")
                    continue
                }
                #expect(text == input)
                #expect(error.description.contains(reason), "\(input): \(error.description)")
            }
        }
    }

    @Test("transport kinds: reliability and Via tokens")
    func kinds() {
        #expect(SIPTransportKind.allCases.map(\.viaToken) == ["UDP", "TCP", "TLS"])
        #expect(SIPTransportKind.allCases.map(\.isReliable) == [false, true, true])
        #expect(SIPPeerAddress(host: "::1", port: 5060).description == "[::1]:5060")
        #expect(SIPPeerAddress(host: "192.0.2.1", port: 5060).description == "192.0.2.1:5060")
    }

    @Test("digests: known vectors and the RFC 7616 §3.9.1 responses")
    func digests() {
        #expect(MessageDigest.md5(Data()) == "d41d8cd98f00b204e9800998ecf8427e")
        #expect(MessageDigest.md5(Data("abc".utf8)) == "900150983cd24fb0d6963f7d28e17f72")
        #expect(MessageDigest.sha256(Data("abc".utf8)) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(MessageDigest.sha256(Data()) == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        #expect(
            MessageDigest.sha512_256(Data("abc".utf8)) == "53048e2681941ef99b2e29b76b4c7dabe4c2d0c634fc6d46e0e2f13107e7af23")

        // RFC 7616 §3.9.1: Mufasa, qop=auth, GET /dir/index.html.
        func response(_ hash: (Data) -> String) -> String {
            func h(_ text: String) -> String { hash(Data(text.utf8)) }
            let ha1 = h("Mufasa:http-auth@example.org:Circle of Life")
            let ha2 = h("GET:/dir/index.html")
            return h(
                "\(ha1):7ypf/xlj9XXwfDPEoM4URrv/xwf94BcCAzFZH4GiTo0v:00000001:"
                    + "f2/wE4q74E6zIJEtWaHKaf5wv/H5QzzpXusqGemxURZJ:auth:\(ha2)")
        }
        #expect(response(MessageDigest.md5) == "8ca523f5e9506fed4657c9700eebdbec")
        #expect(response(MessageDigest.sha256) == "753927fa0e85d155564e2e272a28d1802ca10daf4496794697cf8db5856cb6c1")
    }

    @Test("secure random bytes and [a-z0-9] tokens (no header name, all capitalised, can appear inside one)")
    func randomness() {
        #expect(SecureRandom.bytes(0).isEmpty)
        #expect(SecureRandom.bytes(33).count == 33)
        #expect(SecureRandom.bytes(16) != SecureRandom.bytes(16))
        let token = SecureRandom.token(1000)
        #expect(token.count == 1000)
        #expect(token.utf8.allSatisfy { ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x61 && $0 <= 0x7A) })
        #expect(Set(token).count == 36)
        #expect(SecureRandom.token(0) == "")
        #expect(SecureRandom.token(24) != SecureRandom.token(24))
    }

    @Test("tokens drawn from the shared block of random bytes never repeat, across blocks and threads")
    func tokensAcrossBlocks() {
        // 4 threads × 2,000 tags of 10 characters: about 320 blocks of 256 bytes, drawn while the threads interleave.
        let tokens = Mutex<[String]>([])
        DispatchQueue.concurrentPerform(iterations: 4) { _ in
            let mine = (0..<2000).map { _ in SecureRandom.token(10) }
            tokens.withLock { $0 += mine }
        }
        let all = tokens.withLock { $0 }
        #expect(all.count == 8000)
        #expect(Set(all).count == all.count)
        #expect(all.allSatisfy { $0.utf8.count == 10 })
    }
}
