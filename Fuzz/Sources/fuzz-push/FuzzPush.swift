import Foundation
import VoIPPush

/// One input: the bytes of a push channel connection, fed in two pieces; every whole frame is decoded as a message.
/// A fault is a value; nothing may crash or hang.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzPush(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let bytes = UnsafeBufferPointer(start: data, count: size)
    var decoder = FrameDecoder(maximumLength: 4096)
    for piece in [bytes[..<(size / 2)], bytes[(size / 2)...]] {
        decoder.feed(piece)
        while let frame = try? decoder.nextFrame() { _ = try? PushCodec.decode(frame) }
    }
    return 0
}
