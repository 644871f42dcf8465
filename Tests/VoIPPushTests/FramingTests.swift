import Foundation
import Testing

@testable import VoIPPush

/// The 4-byte length prefix framing, at every byte boundary.
@Suite("framing")
struct FramingTests {
    let encoder = FrameEncoder()

    func bodies(_ count: Int) -> [Data] {
        (0..<count).map { Data("{\"n\":\($0),\"pad\":\"\(String(repeating: "x", count: $0 * 7))\"}".utf8) }
    }

    @Test("a frame is the big-endian length then the body")
    func layout() throws {
        let framed = try encoder.frame(Data("abc".utf8))
        #expect(Array(framed) == [0, 0, 0, 3, 0x61, 0x62, 0x63])
        let big = try encoder.frame(Data(repeating: 0x20, count: 0x0102))
        #expect(Array(big.prefix(4)) == [0, 0, 1, 2])
    }

    @Test("fed one byte at a time, frames come out whole and in order")
    func byteByByte() throws {
        let sent = bodies(6) + [Data()]
        let stream = try sent.reduce(into: Data()) { $0 += try encoder.frame($1) }
        var decoder = FrameDecoder()
        var received: [Data] = []
        for byte in stream {
            received += try decoder.frames(after: [byte])
        }
        #expect(received == sent)
        #expect(decoder.bufferedByteCount == 0)
    }

    @Test("many frames in one buffer")
    func manyInOneBuffer() throws {
        let sent = bodies(200)
        let stream = try sent.reduce(into: Data()) { $0 += try encoder.frame($1) }
        var decoder = FrameDecoder()
        #expect(try decoder.frames(after: stream) == sent)
    }

    @Test("every split point of a three-frame stream")
    func everySplit() throws {
        let sent = bodies(3)
        let stream = try sent.reduce(into: Data()) { $0 += try encoder.frame($1) }
        for first in 0...stream.count {
            for second in stride(from: first, through: stream.count, by: 5) {
                var decoder = FrameDecoder()
                var received = try decoder.frames(after: stream[..<first])
                received += try decoder.frames(after: stream[first..<second])
                received += try decoder.frames(after: stream[second...])
                #expect(received == sent, "split at \(first), \(second)")
            }
        }
    }

    @Test("a partial header or body waits for more")
    func partial() throws {
        var decoder = FrameDecoder()
        #expect(try decoder.frames(after: [0, 0]) == [])
        #expect(try decoder.frames(after: [0, 4, 0x7B]) == [])
        #expect(decoder.bufferedByteCount == 5)
        #expect(try decoder.frames(after: Data("\"\"}".utf8)) == [Data("{\"\"}".utf8)])
    }

    @Test("a zero-length frame is an empty body and the stream stays in step")
    func zeroLength() throws {
        var decoder = FrameDecoder()
        let stream = Data([0, 0, 0, 0]) + (try encoder.frame(Data("{}".utf8)))
        #expect(try decoder.frames(after: stream) == [Data(), Data("{}".utf8)])
    }

    @Test("the limit is inclusive; one byte more fails on the header alone")
    func oversize() throws {
        var decoder = FrameDecoder(maximumLength: 10)
        #expect(try decoder.frames(after: [0, 0, 0, 10] + Array(repeating: UInt8(0x41), count: 10)).count == 1)
        #expect(throws: FrameError.tooLarge(length: 11, limit: 10)) { try decoder.frames(after: [0, 0, 0, 11]) }
        #expect(decoder.hasFailed)
        // Out of step for good: later bytes, even a good frame, do not resynchronise it.
        #expect(throws: FrameError.tooLarge(length: 11, limit: 10)) { try decoder.frames(after: [0, 0, 0, 1, 0x41]) }
        let defaultDecoder = FrameDecoder()
        #expect(defaultDecoder.maximumLength == 65_536)
        var limited = FrameDecoder()
        #expect(throws: FrameError.tooLarge(length: 65_537, limit: 65_536)) { try limited.frames(after: [0, 1, 0, 1]) }
    }

    @Test("garbage (an HTTP request) reads as an absurd length and fails at once")
    func garbage() throws {
        var decoder = FrameDecoder()
        #expect(throws: FrameError.tooLarge(length: 0x4745_5420, limit: 65_536)) {
            try decoder.frames(after: Data("GET / HTTP/1.1\r\n\r\n".utf8))
        }
        var valid = FrameDecoder()
        let good = try encoder.frame(Data("{}".utf8))
        #expect(throws: FrameError.self) { try valid.frames(after: good + Data([0xFF, 0xFF, 0xFF, 0xFF])) }
    }

    @Test("the encoder refuses bodies over its limit")
    func encoderLimit() throws {
        let small = FrameEncoder(maximumLength: 4)
        #expect(throws: FrameError.tooLarge(length: 5, limit: 4)) { try small.frame(Data("12345".utf8)) }
        #expect(try small.frame(Data("1234".utf8)).count == 8)
        #expect(FrameError.tooLarge(length: 5, limit: 4).description == "frame of 5 bytes is over the 4-byte limit")
    }
}
