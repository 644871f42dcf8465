import ConversationKit
import Foundation

/// One input: a contacts file, read as JSON when it starts with `[` or `{`, else as vCard. Reading may fail; it
/// must not crash, and whatever loads answers lookups and searches.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzContacts(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let bytes = Data(bytes: data, count: size)
    let directory: ContactDirectory?
    if let first = bytes.first, first == UInt8(ascii: "[") || first == UInt8(ascii: "{") {
        directory = try? ContactDirectory.parse(json: bytes)
    } else {
        directory = try? ContactDirectory.parse(vCard: String(decoding: bytes, as: UTF8.self))
    }
    if let directory {
        for contact in directory.contacts.prefix(8) {
            for handle in contact.handles.prefix(4) { _ = directory.contact(for: handle) }
        }
        _ = directory.search("5", limit: 10)
    }
    return 0
}
