import ConversationKit
import Foundation
import Testing

@Suite("ContactDirectory")
struct ContactDirectoryTests {
    static let alice = Contact(
        name: "Alice Liddell",
        handles: [
            Handle(kind: .phoneNumber, value: "+1 415 555 0100"), Handle(kind: .emailAddress, value: "alice@example.com"),
        ])
    static let bob = Contact(name: "Bob", handles: [Handle(kind: .phoneNumber, value: "415-555-0199")])

    /// Writes `text` to a uniquely named temporary file, runs `body` with its URL, then removes it.
    private func withTemporaryFile<T>(
        _ text: String, extension ext: String = "txt", _ body: (URL) throws -> T
    ) throws -> T {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("parley-\(UUID().uuidString).\(ext)")
        try Data(text.utf8).write(to: url)
        defer { try? FileManager.default.removeItem(at: url) }
        return try body(url)
    }

    private func loadError(_ text: String) throws -> (ContactDirectoryError, String) {
        try withTemporaryFile(text) { url in
            do throws(ContactDirectoryError) {
                _ = try ContactDirectory.load(contentsOf: url)
                Issue.record("expected an error for \(text.debugDescription)")
                return (.emptyFile(path: "unreachable"), url.path)
            } catch {
                return (error, url.path)
            }
        }
    }

    // MARK: Lookup

    @Test func looksUpByNormalisedHandle() throws {
        let directory = ContactDirectory(contacts: [Self.alice, Self.bob])
        #expect(directory.count == 2)
        #expect(directory.contacts == [Self.alice, Self.bob])
        #expect(directory.conflicts.isEmpty)
        #expect(directory.contact(for: Handle(kind: .phoneNumber, value: "(415) 555-0100")) == Self.alice)
        #expect(directory.contact(for: Handle(kind: .emailAddress, value: " ALICE@example.com")) == Self.alice)
        #expect(directory.contact(for: Handle(kind: .phoneNumber, value: "+14155550199")) == Self.bob)
        #expect(directory.contact(for: Handle(kind: .generic, value: "+14155550100")) == nil)
        #expect(directory.contact(for: Handle(kind: .phoneNumber, value: "")) == nil)
    }

    @Test func displayNamePrefersContactThenHandle() {
        let directory = ContactDirectory(contacts: [Self.alice])
        #expect(directory.displayName(for: Handle(kind: .phoneNumber, value: "4155550100", displayName: "Unknown")) == "Alice Liddell")
        #expect(directory.displayName(for: Handle(kind: .phoneNumber, value: "4155550101", displayName: "Caller")) == "Caller")
        #expect(directory.displayName(for: Handle(kind: .phoneNumber, value: "4155550101")) == "4155550101")
        #expect(ContactDirectory().count == 0)
    }

    @Test func normalizerDecidesMatches() throws {
        let uk = try HandleNormalizer(defaultCountryCode: "44")
        let contact = Contact(name: "Sherlock", handles: [Handle(kind: .phoneNumber, value: "020 7946 0018")])
        let directory = ContactDirectory(contacts: [contact], normalizer: uk)
        #expect(directory.normalizer == uk)
        #expect(directory.contact(for: Handle(kind: .phoneNumber, value: "+44 20 7946 0018")) == contact)
        #expect(ContactDirectory(contacts: [contact]).contact(for: Handle(kind: .phoneNumber, value: "+442079460018")) == nil)
    }

    @Test func firstContactWinsSharedHandles() throws {
        let carol = Contact(
            name: "Carol",
            handles: [Handle(kind: .phoneNumber, value: "14155550100"), Handle(kind: .emailAddress, value: "c@x.org")])
        let directory = ContactDirectory(contacts: [Self.alice, carol])
        #expect(directory.contact(for: Handle(kind: .phoneNumber, value: "415 555 0100"))?.name == "Alice Liddell")
        #expect(directory.contact(for: Handle(kind: .emailAddress, value: "c@x.org"))?.name == "Carol")
        let expected = ContactDirectory.Conflict(
            handle: NormalizedHandle(kind: .phoneNumber, value: "+14155550100"), keptName: "Alice Liddell",
            ignoredName: "Carol")
        #expect(directory.conflicts == [expected])
        #expect(expected.description.contains("Alice Liddell") && expected.description.contains("Carol"))
        // Reversed order: Carol wins.
        #expect(ContactDirectory(contacts: [carol, Self.alice]).displayName(for: Handle(kind: .phoneNumber, value: "4155550100")) == "Carol")
    }

    @Test func repeatedHandleWithinOneContactIsNoConflict() {
        let contact = Contact(
            name: "Dup", handles: [Handle(kind: .phoneNumber, value: "4155550100"), Handle(kind: .phoneNumber, value: "+1 415 555 0100")])
        #expect(ContactDirectory(contacts: [contact]).conflicts.isEmpty)
    }

    // MARK: JSON

    static let jsonArray = """
        [{"name": "Alice Liddell", "handles": [{"kind": "phoneNumber", "value": "+1 415 555 0100"},
                                               {"kind": "emailAddress", "value": "alice@example.com"}]},
         {"name": "Bob", "handles": [{"kind": 2, "value": "415-555-0199", "displayName": "ignored"}]}]
        """

    @Test func parsesJSONArrayAndObjectForms() throws {
        let array = try ContactDirectory.parse(json: Data(Self.jsonArray.utf8))
        let object = try ContactDirectory.parse(json: Data("\n  {\"contacts\": \(Self.jsonArray)}".utf8))
        for directory in [array, object] {
            #expect(directory.count == 2)
            #expect(directory.contacts.map(\.name) == ["Alice Liddell", "Bob"])
            #expect(directory.displayName(for: Handle(kind: .phoneNumber, value: "14155550100")) == "Alice Liddell")
            #expect(directory.displayName(for: Handle(kind: .phoneNumber, value: "4155550199")) == "Bob")
        }
        #expect(try ContactDirectory.parse(json: Data("[]".utf8)).count == 0)
    }

    @Test func contactRoundTripsThroughJSON() throws {
        let data = try JSONEncoder().encode([Self.alice, Self.bob])
        #expect(try ContactDirectory.parse(json: data).contacts == [Self.alice, Self.bob])
    }

    @Test func loadsJSONFile() throws {
        let directory = try withTemporaryFile("\u{FEFF}  " + Self.jsonArray, extension: "json") {
            try ContactDirectory.load(contentsOf: $0)
        }
        #expect(directory.contact(for: Handle(kind: .emailAddress, value: "Alice@Example.com"))?.name == "Alice Liddell")
    }

    @Test(arguments: [
        (#"[{"name": "A", "handles": [{"kind": "phoneNumber", "value": "1"}]}, {"name": "B", "handles": [{"kind": "fax", "value": "2"}]}]"#,
         ["contacts[1].handles[0].kind", "fax"]),
        (#"{"people": []}"#, ["contacts"]),
        (#"[{"handles": []}]"#, ["contacts[0]", "name"]),
        (#"[{"name": 5, "handles": []}]"#, ["contacts[0].name"]),
        (#"[{"name": "A", "handles": [}]"#, ["malformed", "top level", "not valid JSON"]),
        ("[\n{\"name\": \"x\",\n \"handles\": [}]", ["malformed", "line 3"]),
    ])
    func malformedJSONSaysWhere(_ json: String, _ needles: [String]) throws {
        let (error, path) = try loadError(json)
        guard case .malformedJSON(let errorPath, _) = error else {
            Issue.record("unexpected \(error)")
            return
        }
        #expect(errorPath == path)
        #expect(error.description.contains(path))
        for needle in needles { #expect(error.description.contains(needle), "\(error.description)") }
    }

    @Test func jsonContactsAreValidated() throws {
        #expect(throws: ContactDirectoryError.contactWithoutName(path: nil, location: .jsonIndex(1))) {
            try ContactDirectory.parse(json: Data(#"[{"name": "A", "handles": [{"kind": "generic", "value": "a"}]}, {"name": " ", "handles": []}]"#.utf8))
        }
        let json = #"[{"name": "Eve", "handles": [{"kind": "emailAddress", "value": "eve@"}, {"kind": "phoneNumber", "value": "n/a!"}]}]"#
        let expected = ContactDirectoryError.contactWithoutUsableHandle(
            path: nil, location: .jsonIndex(0), name: "Eve", values: ["eve@", "n/a!"])
        #expect(throws: expected) { try ContactDirectory.parse(json: Data(json.utf8)) }
        #expect(expected.description.contains("Eve") && expected.description.contains("\"eve@\"")
            && expected.description.contains("\"n/a!\"") && expected.description.contains("contacts[0]"))
        let none = ContactDirectoryError.contactWithoutUsableHandle(path: "/x", location: .jsonIndex(2), name: "Z", values: [])
        #expect(none.description == "/x: contacts[2]: contact 'Z' has no handles")
    }

    // MARK: vCard

    static let vCard = [
        "BEGIN:VCARD", "VERSION:3.0", "FN:Liddell\\, Alice\\; \\\\the\\nfirst", "N:Liddell;Alice;;;",
        "TEL;TYPE=cell,voice:+1 415 555", " 0100", "item1.EMAIL;type=INTERNET:ALICE@EXAMPLE.COM", "item1.X-ABLabel:home",
        "PHOTO;ENCODING=b:AAAA", "\tBBBB", "END:VCARD", "",
        "begin:vcard", "version:4.0", "n:Hatter;Mad;;Sir;", "tel;value=uri;type=\"voice,home\":tel:+1-415-555-0199;ext=7",
        "impp:sip:hatter@example.com", "URL:https://example.com/hatter", "x-sip:hatter-desk", "url:SIP:tea@example.com",
        "IMPP:xmpp:hatter@example.com", "end:vcard",
        "BEGIN:VCARD", "N:;Cheshire;;;", "EMAIL:mailto:cat@example.com", "TEL:", "END:VCARD",
    ]

    @Test(arguments: ["\r\n", "\n"])
    func parsesVCardSubset(_ newline: String) throws {
        let directory = try ContactDirectory.parse(vCard: Self.vCard.joined(separator: newline))
        try #require(directory.count == 3)
        let alice = directory.contacts[0]
        #expect(alice.name == "Liddell, Alice; \\the\nfirst")
        #expect(alice.handles == [
            Handle(kind: .phoneNumber, value: "+1 415 5550100"), Handle(kind: .emailAddress, value: "ALICE@EXAMPLE.COM"),
        ])
        let hatter = directory.contacts[1]
        #expect(hatter.name == "Mad Hatter")
        #expect(hatter.handles == [
            Handle(kind: .phoneNumber, value: "+1-415-555-0199;ext=7"), Handle(kind: .generic, value: "sip:hatter@example.com"),
            Handle(kind: .generic, value: "hatter-desk"), Handle(kind: .generic, value: "SIP:tea@example.com"),
        ])
        #expect(directory.contacts[2] == Contact(name: "Cheshire", handles: [Handle(kind: .emailAddress, value: "cat@example.com")]))
        #expect(directory.displayName(for: Handle(kind: .phoneNumber, value: "415.555.0100")) == alice.name)
        #expect(directory.displayName(for: Handle(kind: .emailAddress, value: "alice@example.com")) == alice.name)
        #expect(directory.displayName(for: Handle(kind: .phoneNumber, value: "14155550199")) == "Mad Hatter")
        #expect(directory.displayName(for: Handle(kind: .generic, value: "sip:hatter@example.com")) == "Mad Hatter")
        #expect(directory.contact(for: Handle(kind: .generic, value: "xmpp:hatter@example.com")) == nil)
        #expect(directory.contact(for: Handle(kind: .generic, value: "https://example.com/hatter")) == nil)
    }

    @Test func loadsVCardFileAndIgnoresLinesOutsideCards() throws {
        let text = "  \nBEGIN:VCARD\nFN:Bob\nTEL:415 555 0199\nEND:VCARD\nstray:line\n"
        let directory = try withTemporaryFile(text, extension: "vcf") { try ContactDirectory.load(contentsOf: $0) }
        #expect(directory.contacts == [Contact(name: "Bob", handles: [Handle(kind: .phoneNumber, value: "415 555 0199")])])
        #expect(try ContactDirectory.parse(vCard: "").count == 0)
    }

    @Test(arguments: [
        ("BEGIN:VCARD\nFN:A\nTEL:1 415 555 0100\n", "vCardWithoutEnd", 1, "no matching END:VCARD"),
        ("BEGIN:VCARD\nFN:A\nTEL:4155550100\nEND:VCARD\nEND:VCARD\n", "vCardEndWithoutBegin", 5, "END:VCARD without"),
        ("BEGIN:VCARD\r\nFN:A\r\n  continued\r\nBEGIN:VCARD\r\nEND:VCARD\r\n", "vCardNestedBegin", 4, "inside another vCard"),
        ("BEGIN:VCARD\nTEL:4155550100\nEND:VCARD\nBEGIN:VCARD\nFN;CHARSET=UTF-8: \nTEL:4155550100\nEND:VCARD", "contactWithoutName", 1, "no name"),
        ("BEGIN:VCARD\nFN:A\nTEL:4155550100\nEND:VCARD\n\nBEGIN:VCARD\nFN:Nobody\nTEL:+\nEMAIL:nobody\nEND:VCARD", "contactWithoutUsableHandle", 6, "\"nobody\""),
    ])
    func vCardErrorsNameTheProblemAndLine(_ text: String, _ kind: String, _ line: Int, _ phrase: String) throws {
        let (error, path) = try loadError(text)
        let expected: ContactDirectoryError =
            switch kind {
            case "vCardWithoutEnd": .vCardWithoutEnd(path: path, line: line)
            case "vCardEndWithoutBegin": .vCardEndWithoutBegin(path: path, line: line)
            case "vCardNestedBegin": .vCardNestedBegin(path: path, line: line)
            case "contactWithoutName": .contactWithoutName(path: path, location: .vCardLine(line))
            default: .contactWithoutUsableHandle(path: path, location: .vCardLine(line), name: "Nobody", values: ["+", "nobody"])
            }
        #expect(error == expected)
        #expect(error.description.hasPrefix(path + ": line \(line): "), "\(error.description)")
        #expect(error.description.contains(phrase), "\(error.description)")
        // The same text parsed directly reports the same line without a path.
        #expect(throws: ContactDirectoryError.self) { try ContactDirectory.parse(vCard: text) }
    }

    // MARK: File errors

    @Test func fileErrorsNameThePath() throws {
        let missing = FileManager.default.temporaryDirectory.appendingPathComponent("parley-\(UUID().uuidString).json")
        do throws(ContactDirectoryError) {
            _ = try ContactDirectory.load(contentsOf: missing)
            Issue.record("expected unreadableFile")
        } catch {
            guard case .unreadableFile(let path, let reason) = error else { Issue.record("unexpected \(error)"); return }
            #expect(path == missing.path && !reason.isEmpty)
            #expect(error.description.contains(missing.path) && error.description.contains("cannot read"))
        }

        let directory = FileManager.default.temporaryDirectory
        #expect(throws: ContactDirectoryError.unreadableFile(path: directory.path, reason: "it is a directory")) {
            try ContactDirectory.load(contentsOf: directory)
        }

        let (empty, emptyPath) = try loadError(" \n\t\r\n")
        #expect(empty == .emptyFile(path: emptyPath))
        #expect(empty.description.contains(emptyPath) && empty.description.contains("empty"))

        for text in ["hello", "VERSION:3.0\nBEGIN:VCARD", "\u{FF}\u{FE}garbage", "<xml/>"] {
            let (error, path) = try loadError(text)
            #expect(error == .unknownFormat(path: path))
            #expect(error.description.contains(path) && error.description.contains("unknown format"))
        }
    }

    @Test func emptyFileIsReportedAsEmpty() throws {
        let (error, path) = try loadError("")
        #expect(error == .emptyFile(path: path))
    }

    // MARK: Robustness

    @Test func neverCrashesOnGarbage() {
        var seed: UInt64 = 0x5EED
        let alphabet = Array("BEGIN:VCARD\nEND:VCARD\r\n FN:TEL;EMAIL=\\,;\"[]{}.:x@+0 \t")
        for _ in 0..<500 {
            var text = ""
            for _ in 0..<Int(seed % 80) {
                seed = seed &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
                text.append(alphabet[Int(seed >> 33) % alphabet.count])
            }
            _ = try? ContactDirectory.parse(vCard: text)
            _ = try? ContactDirectory.parse(json: Data(text.utf8))
            _ = HandleNormalizer.northAmerica.normalizedValue(kind: .phoneNumber, value: text)
            _ = HandleNormalizer.northAmerica.normalizedValue(kind: .emailAddress, value: text)
        }
    }
}
