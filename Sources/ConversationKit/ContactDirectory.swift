import Foundation

/// A person in the address book: a name and the handles that reach them.
///
/// JSON: `{"name": "Alice Liddell", "handles": [{"kind": "phoneNumber", "value": "+1 415 555 0100"}]}`.
public struct Contact: Sendable, Hashable, Codable {
    /// The name shown for calls from or to any of `handles`.
    public var name: String
    /// The handles as written in the source (not normalised).
    public var handles: [Handle]

    /// Creates a contact.
    public init(name: String, handles: [Handle]) {
        self.name = name
        self.handles = handles
    }
}

/// An in-memory address book that maps handles to contacts in O(1), using a ``HandleNormalizer``.
///
/// Every handle that normalises is indexed; handles that do not normalise are kept in ``contacts`` but never
/// match. When two contacts share a handle the one loaded first wins and the clash is listed in ``conflicts``.
public struct ContactDirectory: Sendable {
    /// Two contacts claiming the same handle; lookups return the kept (earlier) contact.
    public struct Conflict: Sendable, Hashable, CustomStringConvertible {
        /// The shared handle, normalised.
        public let handle: NormalizedHandle
        /// The name of the contact that lookups return (the one loaded first).
        public let keptName: String
        /// The name of the later contact whose claim on the handle is ignored.
        public let ignoredName: String

        /// Creates a conflict record.
        public init(handle: NormalizedHandle, keptName: String, ignoredName: String) {
            self.handle = handle
            self.keptName = keptName
            self.ignoredName = ignoredName
        }

        /// A one-line warning suitable for a daemon's log.
        public var description: String {
            "handle \(handle) belongs to both '\(keptName)' and '\(ignoredName)'; using '\(keptName)'"
        }
    }

    /// Where in a source file a contact was defined, for error messages.
    public enum Location: Sendable, Hashable, CustomStringConvertible {
        /// The zero-based index in the JSON contacts array.
        case jsonIndex(Int)
        /// The one-based line of the contact's `BEGIN:VCARD`.
        case vCardLine(Int)

        /// `contacts[i]` or `line n`.
        public var description: String {
            switch self {
            case .jsonIndex(let index): "contacts[\(index)]"
            case .vCardLine(let line): "line \(line)"
            }
        }
    }

    /// Every contact, in load order.
    public let contacts: [Contact]
    /// The rules used to match handles.
    public let normalizer: HandleNormalizer
    /// Handles claimed by more than one contact, in load order.
    public let conflicts: [Conflict]
    private let index: [NormalizedHandle: Int]

    /// Indexes `contacts` (earlier contacts win shared handles) without validating them.
    public init(contacts: [Contact] = [], normalizer: HandleNormalizer = .northAmerica) {
        var index: [NormalizedHandle: Int] = [:]
        var conflicts: [Conflict] = []
        for (position, contact) in contacts.enumerated() {
            for handle in contact.handles {
                guard let key = normalizer.normalize(handle) else { continue }
                if let owner = index[key] {
                    if owner != position {
                        conflicts.append(
                            Conflict(handle: key, keptName: contacts[owner].name, ignoredName: contact.name))
                    }
                } else {
                    index[key] = position
                }
            }
        }
        self.contacts = contacts
        self.normalizer = normalizer
        self.conflicts = conflicts
        self.index = index
    }

    /// The number of contacts.
    public var count: Int { contacts.count }

    /// The contact that owns `handle` (compared by normalised value), or nil.
    public func contact(for handle: Handle) -> Contact? {
        guard let key = normalizer.normalize(handle), let position = index[key] else { return nil }
        return contacts[position]
    }

    /// The matching contact's name, or the handle's own display name when no contact matches.
    public func displayName(for handle: Handle) -> String {
        contact(for: handle)?.name ?? handle.displayName
    }

    /// The contacts whose name or one of whose handles contains `query`, ignoring case; a query with digits also
    /// matches phone numbers by their digits alone, however either is written ("555 01" finds "+1 (415) 555-0100").
    /// Sorted by name; at most `limit`. An empty query matches every contact.
    public func search(_ query: String, limit: Int) -> [Contact] {
        let needle = query.trimmingCharacters(in: .whitespaces).lowercased()
        let digits = needle.filter(HandleNormalizer.isASCIIDigit)
        let matchesDigitsOnly = !digits.isEmpty && needle.allSatisfy { HandleNormalizer.isASCIIDigit($0) || " +-().".contains($0) }
        func matches(_ contact: Contact) -> Bool {
            guard !needle.isEmpty else { return true }
            if contact.name.lowercased().contains(needle) { return true }
            return contact.handles.contains { handle in
                handle.value.lowercased().contains(needle)
                    || (matchesDigitsOnly && handle.kind == .phoneNumber && handle.value.filter(HandleNormalizer.isASCIIDigit).contains(digits))
            }
        }
        let found = contacts.filter(matches).sorted {
            $0.name.localizedCaseInsensitiveCompare($1.name) == .orderedAscending
        }
        return Array(found.prefix(max(0, limit)))
    }

    // MARK: - Loading

    /// Reads a contacts file, choosing the format by content: JSON when the first non-whitespace character is
    /// `[` or `{`, vCard when the file starts with `BEGIN:VCARD` (any case).
    public static func load(
        contentsOf url: URL, normalizer: HandleNormalizer = .northAmerica
    ) throws(ContactDirectoryError) -> ContactDirectory {
        let path = url.path
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), isDirectory.boolValue {
            throw .unreadableFile(path: path, reason: "it is a directory")
        }
        let data: Data
        do {
            data = try Data(contentsOf: url)
        } catch {
            throw .unreadableFile(path: path, reason: (error as NSError).localizedDescription)
        }
        var bytes = data[...]
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { bytes = bytes.dropFirst(3) }  // UTF-8 byte order mark
        guard let first = bytes.first(where: { ![0x20, 0x09, 0x0A, 0x0D].contains($0) }) else {
            throw .emptyFile(path: path)
        }
        if first == UInt8(ascii: "[") || first == UInt8(ascii: "{") {
            return try parseJSON(Data(bytes), path: path, normalizer: normalizer)
        }
        guard let text = String(data: Data(bytes), encoding: .utf8),
            text.drop(while: \.isWhitespace).prefix(11).uppercased() == "BEGIN:VCARD"
        else { throw .unknownFormat(path: path) }
        return try parseVCard(text, path: path, normalizer: normalizer)
    }

    /// Parses JSON contacts: either an array of contacts or `{"contacts": [...]}`.
    public static func parse(
        json: Data, normalizer: HandleNormalizer = .northAmerica
    ) throws(ContactDirectoryError) -> ContactDirectory {
        try parseJSON(json, path: nil, normalizer: normalizer)
    }

    /// Parses vCard 3.0/4.0 text holding any number of cards: `FN` (or `N`) gives the name, `TEL` phone
    /// numbers, `EMAIL` email addresses, `X-SIP` and `sip:`/`sips:` `IMPP`/`URL` values generic handles.
    public static func parse(
        vCard: String, normalizer: HandleNormalizer = .northAmerica
    ) throws(ContactDirectoryError) -> ContactDirectory {
        try parseVCard(vCard, path: nil, normalizer: normalizer)
    }

    private struct ContactsFile: Decodable { var contacts: [Contact] }

    private static func parseJSON(
        _ data: Data, path: String?, normalizer: HandleNormalizer
    ) throws(ContactDirectoryError) -> ContactDirectory {
        let isObject = data.first(where: { ![0x20, 0x09, 0x0A, 0x0D].contains($0) }) == UInt8(ascii: "{")
        let contacts: [Contact]
        do {
            let decoder = JSONDecoder()
            contacts =
                isObject
                ? try decoder.decode(ContactsFile.self, from: data).contacts
                : try decoder.decode([Contact].self, from: data)
        } catch let error as DecodingError {
            throw .malformedJSON(path: path, detail: describe(error, in: data, arrayAtTopLevel: !isObject))
        } catch {
            throw .malformedJSON(path: path, detail: String(describing: error))
        }
        let located = contacts.enumerated().map { ($0.element, Location.jsonIndex($0.offset)) }
        return try validated(located, path: path, normalizer: normalizer)
    }

    private static func parseVCard(
        _ text: String, path: String?, normalizer: HandleNormalizer
    ) throws(ContactDirectoryError) -> ContactDirectory {
        let cards = try VCardParser.parse(text, path: path)
        return try validated(cards.map { ($0.contact, Location.vCardLine($0.line)) }, path: path, normalizer: normalizer)
    }

    /// Checks every contact has a name and a usable handle, then builds the directory.
    private static func validated(
        _ contacts: [(Contact, Location)], path: String?, normalizer: HandleNormalizer
    ) throws(ContactDirectoryError) -> ContactDirectory {
        for (contact, location) in contacts {
            guard !contact.name.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty else {
                throw .contactWithoutName(path: path, location: location)
            }
            guard contact.handles.contains(where: { normalizer.normalize($0) != nil }) else {
                throw .contactWithoutUsableHandle(
                    path: path, location: location, name: contact.name, values: contact.handles.map(\.value))
            }
        }
        return ContactDirectory(contacts: contacts.map(\.0), normalizer: normalizer)
    }

    /// `at contacts[1].handles[0].kind: unknown handle kind 'fax'` and the like.
    private static func describe(_ error: DecodingError, in data: Data, arrayAtTopLevel: Bool) -> String {
        func location(_ codingPath: [any CodingKey]) -> String {
            if codingPath.isEmpty { return "top level" }
            var text = arrayAtTopLevel ? "contacts" : ""
            for key in codingPath {
                if let index = key.intValue {
                    text += "[\(index)]"
                } else {
                    text += text.isEmpty ? key.stringValue : ".\(key.stringValue)"
                }
            }
            return text
        }
        switch error {
        case .keyNotFound(let key, let context):
            let parent = location(context.codingPath)
            return "at \(parent): missing key '\(key.stringValue)'"
        case .typeMismatch(let type, let context):
            return "at \(location(context.codingPath)): expected \(type): \(context.debugDescription)"
        case .valueNotFound(let type, let context):
            return "at \(location(context.codingPath)): expected \(type) but found null"
        case .dataCorrupted(let context):
            let syntax = context.codingPath.isEmpty ? JSONSyntax.problem(in: data).map { " (\($0))" } ?? "" : ""
            return "at \(location(context.codingPath)): \(context.debugDescription)\(syntax)"
        @unknown default:
            return String(describing: error)
        }
    }
}

/// Why a contacts file or text could not be loaded; descriptions name the file and, for vCard, the line.
public enum ContactDirectoryError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The file could not be read (missing, unreadable, a directory…).
    case unreadableFile(path: String, reason: String)
    /// The file is empty or whitespace only.
    case emptyFile(path: String)
    /// The file is neither JSON nor vCard.
    case unknownFormat(path: String)
    /// The JSON could not be decoded; `detail` says where and why.
    case malformedJSON(path: String?, detail: String)
    /// A `BEGIN:VCARD` at `line` is never closed.
    case vCardWithoutEnd(path: String?, line: Int)
    /// An `END:VCARD` at `line` has no open card.
    case vCardEndWithoutBegin(path: String?, line: Int)
    /// A `BEGIN:VCARD` at `line` appears inside another card.
    case vCardNestedBegin(path: String?, line: Int)
    /// A contact has no (non-blank) name.
    case contactWithoutName(path: String?, location: ContactDirectory.Location)
    /// None of a contact's handles normalises; `values` are the raw handle values (empty when it has none).
    case contactWithoutUsableHandle(path: String?, location: ContactDirectory.Location, name: String, values: [String])

    /// A message naming the file, the place in it and the problem.
    public var description: String {
        switch self {
        case .unreadableFile(let path, let reason):
            return "cannot read contacts file \(path): \(reason)"
        case .emptyFile(let path):
            return "contacts file \(path) is empty"
        case .unknownFormat(let path):
            return "contacts file \(path) has an unknown format: expected JSON (starting with '[' or '{') "
                + "or vCard (starting with BEGIN:VCARD)"
        case .malformedJSON(let path, let detail):
            return "\(Self.prefix(path))malformed contacts JSON: \(detail)"
        case .vCardWithoutEnd(let path, let line):
            return "\(Self.prefix(path))line \(line): BEGIN:VCARD has no matching END:VCARD"
        case .vCardEndWithoutBegin(let path, let line):
            return "\(Self.prefix(path))line \(line): END:VCARD without a preceding BEGIN:VCARD"
        case .vCardNestedBegin(let path, let line):
            return "\(Self.prefix(path))line \(line): BEGIN:VCARD inside another vCard (missing END:VCARD?)"
        case .contactWithoutName(let path, let location):
            return "\(Self.prefix(path))\(location): contact has no name (JSON \"name\", vCard FN or N)"
        case .contactWithoutUsableHandle(let path, let location, let name, let values):
            let what =
                values.isEmpty
                ? "has no handles"
                : "has no usable handle (unusable: \(values.map { "\"\($0)\"" }.joined(separator: ", ")))"
            return "\(Self.prefix(path))\(location): contact '\(name)' \(what)"
        }
    }

    private static func prefix(_ path: String?) -> String { path.map { "\($0): " } ?? "" }
}
