import Foundation
import Glibc
import ParleyTestSupport
import Testing

/// No reflection (issue 48): an INVITE whose source could be spoofed, naming a third party in `c=`, draws no media
/// from an auto-answering parleyd until the caller proves it receives the answer (the ACK).
@Suite("Interop: a spoofed INVITE draws no media", .serialized, .timeLimit(.minutes(1)))
struct ReflectionTests {
    /// A UDP socket on 127.0.0.1 at a port the kernel picks, its receive timeout `seconds`; the socket and its port.
    static func socketAndPort(timeout seconds: Int) throws -> (Int32, Int) {
        let fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
        }
        try #require(bound)
        var timeout = timeval(tv_sec: seconds, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        return (fd, Int(UInt16(bigEndian: address.sin_port)))
    }

    /// Sends `text` from `fd` to 127.0.0.1:`port`.
    static func send(_ text: String, from fd: Int32, to port: UInt16) {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = port.bigEndian
        let bytes = Array(text.utf8)
        _ = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                sendto(fd, bytes, bytes.count, 0, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
    }

    /// A request from 127.0.0.1:`from` to parleyd's `port`.
    static func request(_ method: String, cseq: Int, from: Int, port: UInt16, toTag: String? = nil, body: String = "") -> String {
        """
        \(method) sip:parley@127.0.0.1:\(port) SIP/2.0\r
        Via: SIP/2.0/UDP 127.0.0.1:\(from);branch=z9hG4bK-reflect-\(method)-\(cseq);rport\r
        Max-Forwards: 70\r
        From: <sip:spoofed@127.0.0.1>;tag=reflect\r
        To: <sip:parley@127.0.0.1>\(toTag.map { ";tag=\($0)" } ?? "")\r
        Call-ID: reflect-\(from)@127.0.0.1\r
        CSeq: \(cseq) \(method)\r
        Contact: <sip:spoofed@127.0.0.1:\(from)>\r
        \(body.isEmpty ? "" : "Content-Type: application/sdp\r\n")Content-Length: \(body.utf8.count)\r
        \r
        \(body)
        """
    }

    @Test("auto-answered, a spoofed INVITE naming a third party's port sends it nothing; the ACK of a real caller starts the audio")
    func spoofedInvite() throws {
        let (callee, folder) = try AudioInterop.AudioInteropTests.parleyd(tone: 1_000, ["--auto-answer", "0"])
        defer { try? FileManager.default.removeItem(at: folder) }
        let (victim, victimPort) = try Self.socketAndPort(timeout: 3)
        defer { close(victim) }
        let (caller, callerPort) = try Self.socketAndPort(timeout: 5)
        defer { close(caller) }
        let sdp = "v=0\r\no=- 1 1 IN IP4 127.0.0.1\r\ns=-\r\nc=IN IP4 127.0.0.1\r\nt=0 0\r\nm=audio \(victimPort) RTP/AVP 0\r\n"
        Self.send(Self.request("INVITE", cseq: 1, from: callerPort, port: callee.port, body: sdp), from: caller, to: callee.port)
        // The 200 answers (the "spoofed" source would never see it); the victim's port hears nothing for 3 s.
        var buffer = [UInt8](repeating: 0, count: 4_096)
        var toTag: String?
        for _ in 0..<5 where toTag == nil {
            let count = recv(caller, &buffer, buffer.count, 0)
            guard count > 0 else { break }
            let text = String(decoding: buffer.prefix(count), as: UTF8.self)
            if text.hasPrefix("SIP/2.0 200"), let line = text.split(separator: "\r\n").first(where: { $0.lowercased().hasPrefix("to:") }),
                let tag = line.components(separatedBy: "tag=").last
            {
                toTag = String(tag.prefix { $0 != ";" && $0 != ">" })
            }
        }
        let tag = try #require(toTag, "parleyd answered 200")
        #expect(recv(victim, &buffer, buffer.count, 0) < 0, "RTP went to the party the unacknowledged INVITE named")
        // A real caller acknowledges the answer: now the audio flows.
        Self.send(Self.request("ACK", cseq: 1, from: callerPort, port: callee.port, toTag: tag), from: caller, to: callee.port)
        let received = recv(victim, &buffer, buffer.count, 0)
        #expect(received > 12 && buffer[0] & 0xC0 == 0x80, "RTP after the ACK: \(received) bytes")
        Self.send(Self.request("BYE", cseq: 2, from: callerPort, port: callee.port, toTag: tag), from: caller, to: callee.port)
        try callee.waitForEnded(1)
    }
}
