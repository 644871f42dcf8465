import Foundation

/// Reads the subset of vCard 3.0/4.0 that an address book for calls needs.
///
/// Handles CRLF/LF/CR line ends, line folding (a line starting with a space or tab continues the previous
/// one), group prefixes (`item1.TEL`), parameters (`TEL;TYPE=cell`, quoted values included), and the text
/// escapes `\,` `\;` `\n` `\\`. Properties used: `FN`, `N` (when there is no `FN`), `TEL`, `EMAIL`, `X-SIP`,
/// and `IMPP`/`URL` when their value is a `sip:`/`sips:` URI. Everything else is ignored, as are lines outside
/// cards and lines without a colon. Names and handles are not validated here.
enum VCardParser {
    /// A parsed card and the line of its `BEGIN:VCARD`.
    struct Card: Sendable, Hashable {
        var contact: Contact
        var line: Int
    }

    private struct Pending {
        var line: Int
        var formattedName: String?
        var structuredName: String?
        var handles: [Handle] = []
    }

    static func parse(_ text: String, path: String?) throws(ContactDirectoryError) -> [Card] {
        var cards: [Card] = []
        var pending: Pending?
        for (content, line) in unfoldedLines(text) {
            guard let (name, rawValue) = splitProperty(content) else { continue }
            let value = rawValue.trimmingCharacters(in: .whitespaces)
            switch name {
            case "BEGIN" where value.uppercased() == "VCARD":
                if pending != nil { throw .vCardNestedBegin(path: path, line: line) }
                pending = Pending(line: line)
            case "END" where value.uppercased() == "VCARD":
                guard let card = pending else { throw .vCardEndWithoutBegin(path: path, line: line) }
                let name = card.formattedName ?? card.structuredName ?? ""
                cards.append(Card(contact: Contact(name: name, handles: card.handles), line: card.line))
                pending = nil
            default:
                guard pending != nil else { continue }  // stray property outside a card
                apply(name: name, value: value, to: &pending!)
            }
        }
        if let card = pending { throw .vCardWithoutEnd(path: path, line: card.line) }
        return cards
    }

    private static func apply(name: String, value: String, to card: inout Pending) {
        switch name {
        case "FN":
            let formatted = unescape(value).trimmingCharacters(in: .whitespacesAndNewlines)
            if card.formattedName == nil, !formatted.isEmpty { card.formattedName = formatted }
        case "N":
            let parts = splitUnescaped(value, on: ";").map {
                unescape($0).trimmingCharacters(in: .whitespacesAndNewlines)
            }
            let family = parts.first ?? ""
            let given = parts.count > 1 ? parts[1] : ""
            let joined = [given, family].filter { !$0.isEmpty }.joined(separator: " ")
            if card.structuredName == nil, !joined.isEmpty { card.structuredName = joined }
        case "TEL":
            addHandle(.phoneNumber, droppingScheme("tel:", from: unescape(value)), to: &card)
        case "EMAIL":
            addHandle(.emailAddress, droppingScheme("mailto:", from: unescape(value)), to: &card)
        case "X-SIP":
            addHandle(.generic, unescape(value), to: &card)
        case "IMPP", "URL":
            let uri = unescape(value)
            let lowered = uri.lowercased()
            if lowered.hasPrefix("sip:") || lowered.hasPrefix("sips:") { addHandle(.generic, uri, to: &card) }
        default:
            break
        }
    }

    private static func addHandle(_ kind: Handle.Kind, _ value: String, to card: inout Pending) {
        let trimmed = value.trimmingCharacters(in: .whitespacesAndNewlines)
        if !trimmed.isEmpty { card.handles.append(Handle(kind: kind, value: trimmed)) }
    }

    private static func droppingScheme(_ scheme: String, from value: String) -> String {
        let trimmed = value.trimmingCharacters(in: .whitespaces)
        guard trimmed.prefix(scheme.count).lowercased() == scheme else { return trimmed }
        return String(trimmed.dropFirst(scheme.count))
    }

    /// Logical lines (folding undone) with the one-based physical line each starts on.
    static func unfoldedLines(_ text: String) -> [(content: String, line: Int)] {
        var result: [(content: String, line: Int)] = []
        let physical = text.split(omittingEmptySubsequences: false) { $0 == "\n" || $0 == "\r\n" || $0 == "\r" }
        for (offset, line) in physical.enumerated() {
            if let first = line.first, first == " " || first == "\t", !result.isEmpty {
                result[result.count - 1].content += line.dropFirst()
            } else {
                result.append((String(line), offset + 1))
            }
        }
        return result
    }

    /// The uppercased property name (group prefix removed) and the raw value, or nil without a colon.
    static func splitProperty(_ line: String) -> (name: String, value: String)? {
        var inQuotes = false
        var colon: String.Index?
        for index in line.indices {
            let character = line[index]
            if character == "\"" {
                inQuotes.toggle()
            } else if character == ":" && !inQuotes {
                colon = index
                break
            }
        }
        guard let colon else { return nil }
        let head = line[..<colon]
        let nameWithGroup = head.split(separator: ";", maxSplits: 1, omittingEmptySubsequences: false).first ?? head
        let name = nameWithGroup.split(separator: ".").last.map(String.init) ?? ""
        let trimmedName = name.trimmingCharacters(in: .whitespaces).uppercased()
        guard !trimmedName.isEmpty else { return nil }
        return (trimmedName, String(line[line.index(after: colon)...]))
    }

    /// Splits `text` on `separator` where it is not preceded by a backslash escape; parts stay escaped.
    static func splitUnescaped(_ text: String, on separator: Character) -> [String] {
        var parts: [String] = [""]
        var escaping = false
        for character in text {
            if escaping {
                parts[parts.count - 1].append(character)
                escaping = false
            } else if character == "\\" {
                parts[parts.count - 1].append(character)
                escaping = true
            } else if character == separator {
                parts.append("")
            } else {
                parts[parts.count - 1].append(character)
            }
        }
        return parts
    }

    /// Resolves `\,` `\;` `\\` and `\n`/`\N`; any other backslash is kept as written.
    static func unescape(_ text: String) -> String {
        var result = ""
        var escaping = false
        for character in text {
            if escaping {
                switch character {
                case ",", ";", "\\": result.append(character)
                case "n", "N": result.append("\n")
                default: result.append("\\"); result.append(character)
                }
                escaping = false
            } else if character == "\\" {
                escaping = true
            } else {
                result.append(character)
            }
        }
        if escaping { result.append("\\") }
        return result
    }
}
