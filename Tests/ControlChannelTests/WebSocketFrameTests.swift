import ControlChannel
import Foundation
import ParleyIO
import Testing

/// Decodes every frame in `bytes` fed one byte at a time.
private func decodeByteByByte(_ bytes: Data, masked: Bool = true, limit: Int = 1 << 20) -> [Result<WebSocketFrame, WebSocketFrameError>] {
    var decoder = WebSocketFrameDecoder(maxPayloadBytes: limit, expectsMasked: masked)
    var results: [Result<WebSocketFrame, WebSocketFrameError>] = []
    for byte in bytes {
        decoder.feed([byte])
        while let next = decoder.next() {
            results.append(next)
            if case .failure = next { return results }
        }
    }
    return results
}

@Suite struct WebSocketFrameTests {
    @Test func sha1AndTheAcceptKeyOfRFC6455() {
        #expect(MessageDigest.sha1(Data("abc".utf8)).map { String(format: "%02x", $0) }.joined()
            == "a9993e364706816aba3e25717850c26c9cd0d89d")
        #expect(MessageDigest.sha1(Data()).count == 20)
        #expect(WebSocketHandshake.acceptValue(forKey: "dGhlIHNhbXBsZSBub25jZQ==") == "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=")
    }

    @Test func theExamplesOfRFC6455Section5_7() {
        let hello = Data("Hello".utf8)
        // A single-frame unmasked text message (as a server sends).
        let unmasked = Data([0x81, 0x05, 0x48, 0x65, 0x6c, 0x6c, 0x6f])
        #expect(WebSocketFrameEncoder.text(hello) == unmasked)
        #expect(decodeByteByByte(unmasked, masked: false) == [.success(WebSocketFrame(.text, hello))])
        // A single-frame masked text message (as a client sends).
        let masked = Data([0x81, 0x85, 0x37, 0xfa, 0x21, 0x3d, 0x7f, 0x9f, 0x4d, 0x51, 0x58])
        #expect(WebSocketFrameEncoder.encode(WebSocketFrame(.text, hello), maskingKey: [0x37, 0xfa, 0x21, 0x3d]) == masked)
        #expect(decodeByteByByte(masked) == [.success(WebSocketFrame(.text, hello))])
        // A fragmented unmasked text message.
        let fragmented = Data([0x01, 0x03, 0x48, 0x65, 0x6c, 0x80, 0x02, 0x6c, 0x6f])
        #expect(decodeByteByByte(fragmented, masked: false) == [
            .success(WebSocketFrame(.text, Data("Hel".utf8), isFinal: false)),
            .success(WebSocketFrame(.continuation, Data("lo".utf8))),
        ])
        // Unmasked ping and masked pong.
        #expect(WebSocketFrameEncoder.encode(WebSocketFrame(.ping, hello)) == Data([0x89, 0x05]) + hello)
        let pong = Data([0x8a, 0x85, 0x37, 0xfa, 0x21, 0x3d, 0x7f, 0x9f, 0x4d, 0x51, 0x58])
        #expect(decodeByteByByte(pong) == [.success(WebSocketFrame(.pong, hello))])
        // 256 bytes (16-bit length) and 64 KiB (64-bit length) binary messages.
        let small = Data(repeating: 7, count: 256)
        #expect(WebSocketFrameEncoder.encode(WebSocketFrame(.binary, small)).prefix(4) == Data([0x82, 0x7E, 0x01, 0x00]))
        let large = Data(repeating: 9, count: 65_536)
        #expect(WebSocketFrameEncoder.encode(WebSocketFrame(.binary, large)).prefix(10)
            == Data([0x82, 0x7F, 0, 0, 0, 0, 0, 0x01, 0x00, 0x00]))
    }

    @Test(arguments: [0, 1, 125, 126, 127, 65_535, 65_536, 70_000])
    func everyLengthEncodingRoundTrips(length: Int) {
        let payload = Data((0..<length).map { UInt8(truncatingIfNeeded: $0 &* 31) })
        let key: [UInt8] = [0xA1, 0x02, 0xF3, 0x44]
        let bytes = WebSocketFrameEncoder.encode(WebSocketFrame(.text, payload, isFinal: false), maskingKey: key)
        let header = length < 126 ? 2 : length <= 65_535 ? 4 : 10
        #expect(bytes.count == header + 4 + length)
        var decoder = WebSocketFrameDecoder(maxPayloadBytes: 1 << 20)
        // Fed in uneven pieces: 1, 2, 3… bytes.
        var results: [Result<WebSocketFrame, WebSocketFrameError>] = []
        var offset = 0, step = 1
        while offset < bytes.count {
            let end = min(bytes.count, offset + step)
            decoder.feed(bytes[(bytes.startIndex + offset)..<(bytes.startIndex + end)])
            while let next = decoder.next() { results.append(next) }
            offset = end
            step += 1
        }
        #expect(results == [.success(WebSocketFrame(.text, payload, isFinal: false))])
        #expect(decoder.bufferedByteCount == 0)
    }

    @Test func severalFramesInOneFeed() {
        let bytes = WebSocketFrameEncoder.encode(WebSocketFrame(.text, Data("a".utf8)), maskingKey: [1, 2, 3, 4])
            + WebSocketFrameEncoder.encode(WebSocketFrame(.ping, Data()), maskingKey: [5, 6, 7, 8])
            + WebSocketFrameEncoder.encode(WebSocketFrame(.close, Data([0x03, 0xE8])), maskingKey: [9, 9, 9, 9])
        var decoder = WebSocketFrameDecoder(maxPayloadBytes: 1024)
        decoder.feed(bytes)
        #expect(decoder.next() == .success(WebSocketFrame(.text, Data("a".utf8))))
        #expect(decoder.next() == .success(WebSocketFrame(.ping, Data())))
        #expect(decoder.next() == .success(WebSocketFrame(.close, Data([0x03, 0xE8]))))
        #expect(decoder.next() == nil)
    }

    @Test func faultsAreErrorsWithTheirCloseCodes() {
        let cases: [(Data, WebSocketFrameError, WebSocketCloseCode)] = [
            (Data([0x81, 0x01, 0x41]), .wrongMasking(expectedMasked: true), .protocolError),
            (Data([0xC1, 0x80, 0, 0, 0, 0]), .reservedBitsSet, .protocolError),
            (Data([0x83, 0x80, 0, 0, 0, 0]), .reservedOpcode(3), .protocolError),
            (Data([0x8B, 0x80, 0, 0, 0, 0]), .reservedOpcode(11), .protocolError),
            (Data([0x09, 0x80, 0, 0, 0, 0]), .invalidControlFrame, .protocolError),
            (Data([0x89, 0xFE, 0x00, 0x7E]), .invalidControlFrame, .protocolError),
            (Data([0x82, 0xFF, 0x80, 0, 0, 0, 0, 0, 0, 0]), .invalidLength, .protocolError),
            // Too large is known from the header alone: no payload needs to arrive.
            (Data([0x81, 0xFE, 0x04, 0x01]), .tooLarge(length: 1025, limit: 1024), .messageTooBig),
        ]
        for (bytes, error, code) in cases {
            #expect(decodeByteByByte(bytes, limit: 1024) == [.failure(error)], "\(Array(bytes))")
            #expect(error.closeCode == code)
        }
        // A client reading a server: a masked frame is the fault.
        #expect(decodeByteByByte(Data([0x81, 0x80, 0, 0, 0, 0]), masked: false) == [.failure(.wrongMasking(expectedMasked: false))])
    }

    @Test func aFailedDecoderStaysFailed() {
        var decoder = WebSocketFrameDecoder(maxPayloadBytes: 1024)
        decoder.feed([0x81, 0x01, 0x41])
        #expect(decoder.next() == .failure(.wrongMasking(expectedMasked: true)))
        decoder.feed(WebSocketFrameEncoder.encode(WebSocketFrame(.text, Data("a".utf8)), maskingKey: [1, 2, 3, 4]))
        #expect(decoder.next() == .failure(.wrongMasking(expectedMasked: true)))
    }

    @Test func closeFramesCarryCodeAndAShortenedReason() {
        let frame = WebSocketFrameEncoder.close(.messageTooBig, reason: String(repeating: "é", count: 100))
        var decoder = WebSocketFrameDecoder(maxPayloadBytes: 1024, expectsMasked: false)
        decoder.feed(frame)
        guard case .success(let close) = decoder.next() else { Issue.record("no close frame"); return }
        #expect(close.opcode == .close)
        #expect(close.payload.prefix(2) == Data([0x03, 0xF1]))
        #expect(close.payload.count <= 125)
        #expect(String(validating: close.payload.dropFirst(2), as: UTF8.self) != nil)
    }
}

@Suite struct WebSocketHandshakeTests {
    private func request(_ headers: [String], method: String = "GET") -> [UInt8] {
        Array(("\(method) / HTTP/1.1\r\n" + headers.map { $0 + "\r\n" }.joined() + "\r\n").utf8)
    }

    private let good = [
        "Host: 127.0.0.1", "Upgrade: WebSocket", "Connection: keep-alive, Upgrade",
        "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==", "Sec-WebSocket-Version: 13",
    ]

    private func status(_ answer: WebSocketHandshake.Answer) -> Int {
        switch answer {
        case .accept: 101
        case .serve(let status, _): status
        case .refuse(let status, _, _): status
        }
    }

    @Test func aGoodRequestIsUpgraded() {
        let answer = WebSocketHandshake.answer(request(good), allowedOrigins: [])
        guard case .accept(let response) = answer else { Issue.record("refused: \(answer)"); return }
        let text = String(decoding: response, as: UTF8.self)
        #expect(text.hasPrefix("HTTP/1.1 101 Switching Protocols\r\n"))
        #expect(text.contains("\r\nSec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n"))
        #expect(text.hasSuffix("\r\n\r\n"))
    }

    @Test func refusals() {
        let without = { (name: String) in good.filter { !$0.hasPrefix(name) } }
        #expect(status(WebSocketHandshake.answer(request(without("Sec-WebSocket-Key")), allowedOrigins: [])) == 400)
        #expect(status(WebSocketHandshake.answer(request(without("Sec-WebSocket-Key") + ["Sec-WebSocket-Key: c2hvcnQ="]), allowedOrigins: [])) == 400)
        #expect(status(WebSocketHandshake.answer(request(without("Upgrade")), allowedOrigins: [])) == 400)
        #expect(status(WebSocketHandshake.answer(request(without("Connection") + ["Connection: keep-alive"]), allowedOrigins: [])) == 400)
        #expect(status(WebSocketHandshake.answer(request(without("Host")), allowedOrigins: [])) == 400)
        #expect(status(WebSocketHandshake.answer(request(good, method: "POST"), allowedOrigins: [])) == 405)
        let version8 = WebSocketHandshake.answer(request(without("Sec-WebSocket-Version") + ["Sec-WebSocket-Version: 8"]), allowedOrigins: [])
        #expect(status(version8) == 426)
        if case .refuse(_, _, let response) = version8 {
            #expect(String(decoding: response, as: UTF8.self).contains("\r\nSec-WebSocket-Version: 13\r\n"))
        }
        #expect(status(WebSocketHandshake.answer(request(good + ["Origin: http://evil.example"]), allowedOrigins: ["http://localhost:8080"])) == 403)
        #expect(status(WebSocketHandshake.answer(request(good + ["Origin: http://localhost:8080"]), allowedOrigins: ["http://localhost:8080"])) == 101)
        #expect(status(WebSocketHandshake.answer(Array("GET /\r\n\r\n".utf8), allowedOrigins: [])) == 400)
    }
}
