import ControlChannel
import Foundation

private let site = WebSite(pages: ["/": WebPage(contentType: "text/html; charset=utf-8", body: Data("<p>page</p>".utf8))])

/// One input: the bytes a client sends on the WebSocket port. The first byte splits the rest in two: a request head
/// for the handshake (pages and upgrade), and a stream of frames fed in two pieces. Nothing may crash or hang.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzWebSocket(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    guard let first = bytes.first else { return 0 }
    let rest = bytes.dropFirst()
    let split = rest.startIndex + min(rest.count, Int(first))
    _ = WebSocketHandshake.answer(Array(rest[..<split]), allowedOrigins: ["http://127.0.0.1:8088"], site: site,
                                  pageHosts: ["127.0.0.1:8088"])
    var decoder = WebSocketFrameDecoder(maxPayloadBytes: 4096)
    let frames = rest[split...]
    let half = frames.startIndex + frames.count / 2
    decoder.feed(frames[..<half])
    var decoded = 0
    while case .success = decoder.next() { decoded += 1 }
    decoder.feed(frames[half...])
    while case .success = decoder.next() { decoded += 1 }
    return 0
}
