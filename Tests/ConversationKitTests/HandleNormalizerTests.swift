import ConversationKit
import Testing

@Suite("HandleNormalizer")
struct HandleNormalizerTests {
    let us = HandleNormalizer.northAmerica
    let uk = try! HandleNormalizer(defaultCountryCode: "44")

    private func phone(_ value: String, _ normalizer: HandleNormalizer = .northAmerica) -> String? {
        normalizer.normalizedValue(kind: .phoneNumber, value: value)
    }

    // MARK: Configuration

    @Test func defaultTrunkPrefixFollowsCountryCode() throws {
        #expect(try HandleNormalizer() == .northAmerica)
        #expect(HandleNormalizer.northAmerica.defaultCountryCode == "1")
        #expect(HandleNormalizer.northAmerica.nationalTrunkPrefix == "1")
        #expect(uk.defaultCountryCode == "44")
        #expect(uk.nationalTrunkPrefix == "0")
        #expect(try HandleNormalizer(defaultCountryCode: "61", nationalTrunkPrefix: "0").nationalTrunkPrefix == "0")
        #expect(try HandleNormalizer(defaultCountryCode: "39", nationalTrunkPrefix: "").nationalTrunkPrefix == "")
        #expect(try HandleNormalizer(defaultCountryCode: "358").defaultCountryCode == "358")
    }

    @Test(arguments: ["", "1234", "+1", "a1", "4 4", "０", "0", "044"])
    func invalidCountryCodeThrows(_ code: String) throws {
        #expect(throws: HandleNormalizer.ConfigurationError.invalidCountryCode(code)) {
            try HandleNormalizer(defaultCountryCode: code)
        }
        let error = HandleNormalizer.ConfigurationError.invalidCountryCode(code)
        #expect(error.description.contains("country code '\(code)'"))
    }

    @Test(arguments: ["x", "0000", "+0", " 0"])
    func invalidTrunkPrefixThrows(_ prefix: String) throws {
        #expect(throws: HandleNormalizer.ConfigurationError.invalidTrunkPrefix(prefix)) {
            try HandleNormalizer(defaultCountryCode: "44", nationalTrunkPrefix: prefix)
        }
        #expect(HandleNormalizer.ConfigurationError.invalidTrunkPrefix(prefix).description.contains("'\(prefix)'"))
    }

    // MARK: Phone numbers

    @Test(arguments: [
        "+1 (415) 555-0100", "14155550100", "415-555-0100", "tel:+1-415-555-0100;ext=12", "1-415-555-0100",
        "TEL:+14155550100", "(415) 555.0100", "415/555/0100", "  +1\t415 555 0100\n", "tel:4155550100;phone-context=+1",
        "001 415 555 0100",
    ])
    func usNumbersNormaliseToE164(_ value: String) {
        #expect(phone(value) == "+14155550100")
    }

    @Test func usSpecFormsMatchEachOther() {
        let forms = ["+1 (415) 555-0100", "14155550100", "415-555-0100"].map { Handle(kind: .phoneNumber, value: $0) }
        for a in forms {
            for b in forms { #expect(a.matches(b, using: us), "\(a) vs \(b)") }
        }
        #expect(!forms[0].matches(Handle(kind: .phoneNumber, value: "415-555-0101"), using: us))
    }

    @Test(arguments: ["020 7946 0018", "+44 20 7946 0018", "0044 20 7946 0018", "(020) 7946-0018", "tel:+44-20-7946-0018"])
    func ukNumbersNormaliseWithCountryCode44(_ value: String) {
        #expect(phone(value, uk) == "+442079460018")
    }

    @Test func trunkPrefixIsStrippedOnlyOnce() throws {
        #expect(phone("0020 7946", uk) == "+207946")  // "00" means international, checked first
        #expect(phone("1 1 415", us) == "+11415")
        let italy = try HandleNormalizer(defaultCountryCode: "39", nationalTrunkPrefix: "")
        #expect(phone("06 1234 5678", italy) == "+390612345678")
    }

    @Test func internationalNumbersKeepTheirOwnCountryCode() {
        #expect(phone("+44 20 7946 0018") == "+442079460018")
        #expect(phone("0044 20 7946 0018") == "+442079460018")
        #expect(phone("+1 415 555 0100", uk) == "+14155550100")
    }

    @Test(arguments: [
        ("1-800-FLOWERS", "+18003569377"), ("1-800-flowers", "+18003569377"), ("800 GO FEDEX", "+18004633339"),
        ("+1 ABC DEF GHIJ", "+12223334445"), ("pqrs tuv wxyz", "+177778889999"), ("jkl mno", "+1555666"),
    ])
    func keypadLettersBecomeDigits(_ value: String, _ expected: String) {
        #expect(phone(value) == expected)
    }

    @Test(arguments: [
        ("*67", "*67"), ("#31#", "#31#"), ("*67 415-555-0100", "*674155550100"), ("*98#", "*98#"),
        ("tel:*123#;foo=bar", "*123#"),
    ])
    func serviceCodesGetNoCountryCode(_ value: String, _ expected: String) {
        #expect(phone(value) == expected)
        #expect(phone(value, uk) == expected)
    }

    @Test(arguments: [
        "", "   ", "tel:", "tel:;ext=1", "+", "00", "1", "()- ./", "*#", "#", "415@555", "415_555_0100",
        "++14155550100", "415+5550100", "4155550100 ext. 12,", "+1 415 555 01００", "é", "415!",
    ])
    func unusablePhoneNumbersAreNil(_ value: String) {
        #expect(phone(value) == nil)
        #expect(us.normalize(Handle(kind: .phoneNumber, value: value)) == nil)
    }

    @Test func zeroIsUnusableOnlyWhereItIsTheTrunkPrefix() {
        #expect(phone("0", uk) == nil)
        #expect(phone("0") == "+10")
    }

    // MARK: Email addresses

    @Test(arguments: [
        "alice@example.com", "Alice@Example.COM", "  alice@example.com\n", "mailto:alice@example.com",
        "MAILTO:ALICE@EXAMPLE.COM", " MailTo: Alice@example.com ",
    ])
    func emailsAreTrimmedAndLowercased(_ value: String) {
        #expect(us.normalizedValue(kind: .emailAddress, value: value) == "alice@example.com")
    }

    @Test(arguments: ["", "   ", "mailto:", "alice", "@example.com", "alice@", "a@b@c", "mailto:@", " @ "])
    func malformedEmailsAreNil(_ value: String) {
        #expect(us.normalizedValue(kind: .emailAddress, value: value) == nil)
    }

    // MARK: Generic values

    @Test func genericValuesAreExact() {
        #expect(us.normalizedValue(kind: .generic, value: "sip:Alice@Example.com") == "sip:Alice@Example.com")
        #expect(us.normalizedValue(kind: .generic, value: " alice ") == " alice ")
        #expect(us.normalizedValue(kind: .generic, value: "") == nil)
        let a = Handle(kind: .generic, value: "sip:alice@example.com")
        #expect(a.matches(Handle(kind: .generic, value: "sip:alice@example.com"), using: us))
        #expect(!a.matches(Handle(kind: .generic, value: "sip:Alice@example.com"), using: us))
        #expect(!a.matches(Handle(kind: .generic, value: "sip:alice@example.com "), using: us))
    }

    // MARK: Matching

    @Test func displayNameNeverTakesPart() {
        let a = Handle(kind: .phoneNumber, value: "415-555-0100", displayName: "Alice")
        let b = Handle(kind: .phoneNumber, value: "+14155550100", displayName: "Mobile")
        #expect(a.matches(b, using: us))
        #expect(us.normalize(a) == us.normalize(b))
        let c = Handle(kind: .emailAddress, value: "a@x.org", displayName: "A")
        #expect(c.matches(Handle(kind: .emailAddress, value: "A@X.org"), using: us))
    }

    @Test func kindsNeverMatchEachOther() {
        let phone = Handle(kind: .phoneNumber, value: "+14155550100")
        let generic = Handle(kind: .generic, value: "+14155550100")
        #expect(!phone.matches(generic, using: us))
        #expect(us.normalize(phone) != us.normalize(generic))
    }

    @Test func unusableHandlesMatchNothingNotEvenThemselves() {
        let bad = Handle(kind: .emailAddress, value: "not-an-address")
        #expect(!bad.matches(bad, using: us))
        #expect(!Handle(kind: .generic, value: "").matches(Handle(kind: .generic, value: ""), using: us))
    }

    @Test func normalizeReportsKindAndValue() throws {
        let normalized = try #require(uk.normalize(Handle(kind: .phoneNumber, value: "020 7946 0018", displayName: "x")))
        #expect(normalized == NormalizedHandle(kind: .phoneNumber, value: "+442079460018"))
        #expect(normalized.description == "phoneNumber:+442079460018")
        #expect(uk.normalizedValue(kind: .phoneNumber, value: "020 7946 0018") == normalized.value)
    }

    @Test func countryCodeChangesTheMeaningOfNationalNumbers() {
        let a = Handle(kind: .phoneNumber, value: "020 7946 0018")
        let b = Handle(kind: .phoneNumber, value: "+44 20 7946 0018")
        #expect(a.matches(b, using: uk))
        #expect(!a.matches(b, using: us))
    }
}
