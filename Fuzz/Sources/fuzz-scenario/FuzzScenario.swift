import ConversationConformance
import Foundation

/// One input: a conformance scenario file. Reading may fail with a clear error; it must not crash.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzScenario(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    _ = try? Scenario.parse(Data(bytes: data, count: size), source: "fuzz")
    return 0
}
