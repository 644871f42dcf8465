import Foundation

/// A wire type that writes its own JSON — the same bytes `JSONEncoder` writes with sorted keys and unescaped
/// slashes (a test compares them) — for the messages that carry many conversations (`list`, action results,
/// `conversationChanged`). Foundation's encoder spends ~60 µs per conversation on Linux, which made `list` of 100
/// calls take 9 ms; see docs/architecture.md.
protocol ControlFastJSON {
    /// Appends the value's JSON.
    func writeJSON(_ out: inout JSONOut)
    /// About how many bytes that is (so that the buffer grows once).
    var estimatedJSONBytes: Int { get }
}

extension ControlFastJSON {
    /// One conversation's worth.
    var estimatedJSONBytes: Int { 1024 }
}

/// JSON text being written: members in the order given (callers give them sorted), strings escaped as RFC 8259 asks
/// and as `JSONEncoder` does.
struct JSONOut {
    private(set) var bytes: [UInt8] = []
    private var needsComma = false

    init(capacity: Int = 512) { bytes.reserveCapacity(capacity) }

    /// `{…}`: `body` writes the members.
    mutating func object(_ body: (inout JSONOut) -> Void) {
        bytes.append(UInt8(ascii: "{"))
        needsComma = false
        body(&self)
        bytes.append(UInt8(ascii: "}"))
        needsComma = true
    }

    /// `[…]` of `values`.
    mutating func array<Element>(_ values: [Element], _ write: (inout JSONOut, Element) -> Void) {
        bytes.append(UInt8(ascii: "["))
        needsComma = false
        for value in values {
            comma()
            write(&self, value)
            needsComma = true
        }
        bytes.append(UInt8(ascii: "]"))
        needsComma = true
    }

    /// `"key":` before a member's value.
    mutating func key(_ key: StaticString) {
        comma()
        bytes.append(UInt8(ascii: "\""))
        key.withUTF8Buffer { bytes.append(contentsOf: $0) }
        bytes.append(UInt8(ascii: "\""))
        bytes.append(UInt8(ascii: ":"))
        needsComma = false
    }

    /// A member with a string, an optional string (null), a boolean, an integer, or a string array.
    mutating func member(_ name: StaticString, _ value: String?) {
        key(name)
        if let value { string(value) } else { null() }
        needsComma = true
    }

    mutating func member(_ name: StaticString, _ value: Bool) {
        key(name)
        let word: StaticString = value ? "true" : "false"
        word.withUTF8Buffer { bytes.append(contentsOf: $0) }
        needsComma = true
    }

    mutating func member(_ name: StaticString, _ value: Int?) {
        key(name)
        if let value { bytes.append(contentsOf: Array(String(value).utf8)) } else { null() }
        needsComma = true
    }

    mutating func member(_ name: StaticString, strings: [String]) {
        key(name)
        array(strings) { out, value in out.string(value) }
    }

    /// Raw JSON another encoder wrote.
    mutating func raw(_ data: Data) {
        comma()
        bytes.append(contentsOf: data)
        needsComma = true
    }

    mutating func null() {
        ("null" as StaticString).withUTF8Buffer { bytes.append(contentsOf: $0) }
        needsComma = true
    }

    /// A JSON string literal (most strings need no escape and are copied whole).
    mutating func string(_ text: String) {
        bytes.append(UInt8(ascii: "\""))
        var text = text
        text.withUTF8 { utf8 in
            if !utf8.contains(where: { $0 < 0x20 || $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\\") }) {
                bytes.append(contentsOf: utf8)
            } else {
                for byte in utf8 { escaped(byte) }
            }
        }
        bytes.append(UInt8(ascii: "\""))
        needsComma = true
    }

    /// One byte of a string, escaped as JSONEncoder does.
    private mutating func escaped(_ byte: UInt8) {
        let escape: UInt8
        switch byte {
        case UInt8(ascii: "\""): escape = UInt8(ascii: "\"")
        case UInt8(ascii: "\\"): escape = UInt8(ascii: "\\")
        case 0x0A: escape = UInt8(ascii: "n")
        case 0x0D: escape = UInt8(ascii: "r")
        case 0x09: escape = UInt8(ascii: "t")
        case 0x08: escape = UInt8(ascii: "b")
        case 0x0C: escape = UInt8(ascii: "f")
        case 0..<0x20:
            let hex = Array("0123456789abcdef".utf8)
            bytes.append(contentsOf: Array("\\u00".utf8) + [hex[Int(byte >> 4)], hex[Int(byte & 0x0F)]])
            return
        default:
            bytes.append(byte)
            return
        }
        bytes.append(UInt8(ascii: "\\"))
        bytes.append(escape)
    }

    private mutating func comma() {
        if needsComma { bytes.append(UInt8(ascii: ",")) }
    }
}

extension HandleInfo: ControlFastJSON {
    func writeJSON(_ out: inout JSONOut) {
        out.object { out in
            out.member("contactName", contactName)
            out.member("displayName", displayName)
            out.member("kind", kind)
            out.member("value", value)
        }
    }
}

extension ConversationInfo: ControlFastJSON {
    func writeJSON(_ out: inout JSONOut) {
        out.object { out in
            out.member("account", account)
            out.key("activeRemoteMembers")
            out.array(activeRemoteMembers) { out, member in member.writeJSON(&out) }
            out.member("callID", callID)
            out.member("canShareActivity", canShareActivity)
            out.member("capabilities", strings: capabilities)
            out.member("connectedAt", connectedAt)
            out.member("createdAt", createdAt)
            out.member("direction", direction)
            out.member("displayName", displayName)
            out.member("encryption", encryption)
            out.member("endedAt", endedAt)
            out.member("endedReason", endedReason)
            out.member("group", group)
            out.member("isMuted", isMuted)
            out.member("isRemotelyHeld", isRemotelyHeld)
            out.member("isVideo", isVideo)
            out.key("localMember")
            if let localMember { localMember.writeJSON(&out) } else { out.null() }
            out.key("members")
            out.array(members) { out, member in member.writeJSON(&out) }
            out.member("pendingActions", strings: pendingActions)
            out.member("sipReason", sipReason)
            out.member("sipStatus", sipStatus)
            out.member("state", state)
            out.member("transferredFrom", transferredFrom)
            out.member("uuid", uuid)
            out.member("viaPush", viaPush)
        }
    }
}

extension ListResult: ControlFastJSON {
    var estimatedJSONBytes: Int { 64 + 800 * conversations.count }

    func writeJSON(_ out: inout JSONOut) {
        out.object { out in
            out.key("conversations")
            out.array(conversations) { out, conversation in conversation.writeJSON(&out) }
            out.member("nextCursor", nextCursor)
            out.member("total", total)
        }
    }
}

extension ActionResult: ControlFastJSON {
    func writeJSON(_ out: inout JSONOut) {
        out.object { out in
            out.member("action", action)
            out.member("actionUUID", actionUUID)
            out.key("conversation")
            conversation.writeJSON(&out)
            out.member("state", state)
        }
    }
}

extension ConversationChanged: ControlFastJSON {
    func writeJSON(_ out: inout JSONOut) {
        out.object { out in
            out.member("changes", strings: changes)
            out.key("conversation")
            conversation.writeJSON(&out)
            out.member("from", from)
        }
    }
}

extension JSONOut {
    /// `{"<id or event member>","<payload member>":…,"v":1}` — an envelope around a fast payload, keys sorted.
    static func envelope(
        id: ControlRequestID?, event: String?, payloadKey: StaticString, _ payload: some ControlFastJSON
    ) -> Data {
        var out = JSONOut(capacity: payload.estimatedJSONBytes + 64)
        out.object { out in
            if let event {
                out.key("data")
                payload.writeJSON(&out)
                out.member("event", event)
            }
            if let id {
                out.key("id")
                switch id {
                case .number(let number): out.bytes.append(contentsOf: Array(String(number).utf8))
                case .string(let string): out.string(string)
                }
                out.needsComma = true
                out.key(payloadKey)
                payload.writeJSON(&out)
            }
            out.member("v", ControlProtocol.version)
        }
        return Data(out.bytes)
    }
}
