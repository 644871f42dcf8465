import ControlProtocol
import Foundation

/// One input: a control API message as a client could send it. Decoding may fail; it must not crash.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzControlRequest(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let line = Data(bytes: data, count: size)
    if let request = try? ControlRequest.parse(line) {
        // What parses must encode and parse back to itself.
        guard (try? ControlRequest.parse(request.encoded())) == request else { fatalError("round trip broke: \(request)") }
    }
    return 0
}
