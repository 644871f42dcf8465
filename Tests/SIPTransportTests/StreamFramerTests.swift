import Foundation
import Testing

@testable import SIPTransport
@testable import ParleyIO
import ParleyTestSupport

/// Feeds `bytes` to `framer` and collects frames until it needs more.
private func feed(_ framer: inout StreamFramer, _ bytes: some Sequence<UInt8>) throws -> [StreamFrame] {
    framer.append(bytes)
    var frames: [StreamFrame] = []
    while let frame = try framer.next() { frames.append(frame) }
    return frames
}

private func text(_ string: String) -> [UInt8] { Array(string.utf8) }

private func messages(_ frames: [StreamFrame]) -> [Data] {
    frames.compactMap { frame in
        switch frame {
        case .message(let data): data
        case .ping: nil
        }
    }
}

@Suite("Stream framing by Content-Length")
struct StreamFramerTests {
    let first = sipMessage("one", body: "v=0\r\nhello")
    let second = sipMessage("two")

    @Test("one whole message comes out exactly, body included")
    func wholeMessage() throws {
        var framer = StreamFramer(maxMessageBytes: 65_536)
        #expect(try feed(&framer, first) == [.message(first)])
        #expect(framer.bufferedCount == 0)
    }

    @Test("fed one byte at a time, each message comes out once, when whole")
    func byteByByte() throws {
        var framer = StreamFramer(maxMessageBytes: 65_536)
        let stream = first + second
        var frames: [StreamFrame] = []
        for (index, byte) in stream.enumerated() {
            let got = try feed(&framer, [byte])
            if index == first.count - 1 { #expect(got == [.message(first)]) }
            if index == stream.count - 1 { #expect(got == [.message(second)]) }
            frames += got
        }
        #expect(frames == [.message(first), .message(second)])
    }

    @Test("split at every byte boundary, the same two messages come out")
    func everySplit() throws {
        let stream = Array(first + Data("\r\n".utf8) + second)
        for split in 0...stream.count {
            var framer = StreamFramer(maxMessageBytes: 65_536)
            let frames = try feed(&framer, stream[..<split]) + feed(&framer, stream[split...])
            #expect(frames == [.message(first), .message(second)], "split at \(split)")
        }
    }

    @Test("many messages in one read all come out, in order")
    func manyInOne() throws {
        let all = (0..<200).map { sipMessage("m\($0)", body: String(repeating: "x", count: $0)) }
        var framer = StreamFramer(maxMessageBytes: 65_536)
        let frames = try feed(&framer, all.reduce(Data(), +))
        #expect(messages(frames) == all)
    }

    @Test("keep-alives: CRLFCRLF is a ping, a lone CRLF is skipped, a split ping is still one ping")
    func keepAlives() throws {
        var framer = StreamFramer(maxMessageBytes: 65_536)
        #expect(try feed(&framer, text("\r\n\r\n")) == [.ping])
        #expect(try feed(&framer, text("\r\n\r\n\r\n\r\n")) == [.ping, .ping])
        #expect(try feed(&framer, text("\r\n")).isEmpty)
        #expect(try feed(&framer, text("\r\n")) == [.ping])
        #expect(try feed(&framer, text("\r")).isEmpty)
        #expect(try feed(&framer, text("\n")).isEmpty)
        #expect(try feed(&framer, text("\r")).isEmpty)
        #expect(try feed(&framer, text("\n")) == [.ping])
        // A pong (lone CRLF) before a message, and CRLFs after one.
        #expect(try feed(&framer, text("\r\n") + first + text("\r\n")) == [.message(first)])
        #expect(try feed(&framer, second) == [.message(second)])
        #expect(try feed(&framer, text("\r\n\r\n") + first) == [.ping, .message(first)])
    }

    @Test("Content-Length in any case, compact form 'l', spaces before the colon, folded, repeated alike")
    func contentLengthForms() throws {
        let forms = [
            "content-LENGTH: 5", "l: 5", "L:5", "Content-Length   : 5", "Content-Length:\r\n 5",
            "Content-Length: 5\r\nContent-Length: 5", "Content-Length: 5  ",
        ]
        for form in forms {
            let bytes = text("MESSAGE sip:a@b SIP/2.0\r\nCall-ID: x\r\n\(form)\r\nX-Other-L: 9\r\n\r\nhello")
            var framer = StreamFramer(maxMessageBytes: 65_536)
            #expect(try feed(&framer, bytes) == [.message(Data(bytes))], "form \(form)")
        }
        var framer = StreamFramer(maxMessageBytes: 65_536)
        let empty = text("SIP/2.0 200 OK\r\nContent-Length: 0\r\n\r\n")
        #expect(try feed(&framer, empty + empty) == [.message(Data(empty)), .message(Data(empty))])
    }

    @Test("no, negative, junk or conflicting Content-Length is a framing error, and the framer stays failed")
    func badContentLength() throws {
        let cases: [(String, StreamFramingError)] = [
            ("", .missingContentLength), ("Content-Length: -1\r\n", .invalidContentLength),
            ("Content-Length: 12abc\r\n", .invalidContentLength), ("Content-Length:\r\n", .invalidContentLength),
            ("Content-Length: 1\r\nl: 2\r\n", .invalidContentLength), ("Content-Length: +3\r\n", .invalidContentLength),
            ("Content-Lengthy: 3\r\n", .missingContentLength),
        ]
        for (header, expected) in cases {
            var framer = StreamFramer(maxMessageBytes: 65_536)
            let bytes = text("OPTIONS sip:a@b SIP/2.0\r\nCall-ID: x\r\n\(header)\r\n")
            #expect(throws: expected, "header \(header)") { try feed(&framer, bytes) }
            #expect(throws: expected) { try feed(&framer, second) }
            #expect(framer.failure == expected)
        }
    }

    @Test("oversize: an endless header section, a large declared body, and the exact limit")
    func oversize() throws {
        var endless = StreamFramer(maxMessageBytes: 1000)
        #expect(try feed(&endless, Array(repeating: UInt8(ascii: "a"), count: 1000)).isEmpty)
        #expect(throws: StreamFramingError.oversize) { try feed(&endless, [UInt8(ascii: "a")]) }

        let header = text("OPTIONS sip:a@b SIP/2.0\r\nContent-Length: 2000\r\n\r\n")
        var declared = StreamFramer(maxMessageBytes: 1000)
        #expect(throws: StreamFramingError.oversize) { try feed(&declared, header) }

        var huge = StreamFramer(maxMessageBytes: 1000)
        #expect(throws: StreamFramingError.oversize) {
            try feed(&huge, text("OPTIONS sip:a@b SIP/2.0\r\nContent-Length: 99999999999999999999999\r\n\r\n"))
        }

        let start = text("OPTIONS sip:a@b SIP/2.0\r\nContent-Length: ")
        let headerSize = start.count + 3 + 4
        let exact = start + text("\(1000 - headerSize)\r\n\r\n") + Array(repeating: UInt8(ascii: "b"), count: 1000 - headerSize)
        #expect(exact.count == 1000)
        var fits = StreamFramer(maxMessageBytes: 1000)
        #expect(try feed(&fits, exact) == [.message(Data(exact))])
    }

    @Test("garbage without line ends is refused at the limit, not buffered forever")
    func garbage() throws {
        var framer = StreamFramer(maxMessageBytes: 4096)
        var refused = false
        for _ in 0..<100 {
            do {
                _ = try feed(&framer, Array(repeating: UInt8(0x41), count: 100))
            } catch let error as StreamFramingError {
                #expect(error == .oversize)
                refused = true
                break
            }
        }
        #expect(refused)
        #expect(framer.bufferedCount == 0)
    }
}
