import CommandLineSupport
import ConversationKit
import Foundation

/// `parley contacts FILE [--match VALUE]`: loads a contacts file and shows what a handle resolves to.
enum ContactsCommand {
    static let help = """
        usage: parley contacts FILE [--match VALUE [--kind KIND]] [--country-code CC] [--trunk-prefix P] [--json]

        Loads a contacts file (JSON or vCard), reports its contacts and any handle claimed by two contacts, and
        with --match resolves a handle to a contact name by Parley's matching rules: phone numbers by E.164
        digits (with the default country code), emails case-insensitively, generic values exactly.

        options:
          --match VALUE        the handle value to resolve
          --kind KIND          phoneNumber (default), emailAddress or generic
          --country-code CC    default country code for national numbers (default 1)
          --trunk-prefix P     national trunk prefix (default 1 for country code 1, else 0)
          --json               print the contacts, conflicts and match as one JSON object

        examples:
          parley contacts contacts.vcf --match "415-555-0100"
          parley contacts contacts.json --match bob@EXAMPLE.com --kind emailAddress
        """

    static func run(_ raw: [String]) throws -> ExitCode {
        var arguments = Arguments(raw)
        let json = arguments.flag("--json")
        let match = try arguments.option("--match")
        let kind = try arguments.option("--kind", as: "generic, phoneNumber or emailAddress", Handle.Kind.init(name:))
        let countryCode = try arguments.option("--country-code") ?? "1"
        let trunkPrefix = try arguments.option("--trunk-prefix")
        let files = try arguments.positionals()
        guard files.count == 1 else { throw UsageError("name exactly one contacts file") }
        if kind != nil && match == nil { throw UsageError("--kind only goes with --match") }

        let normalizer: HandleNormalizer
        do {
            normalizer = try HandleNormalizer(defaultCountryCode: countryCode, nationalTrunkPrefix: trunkPrefix)
        } catch {
            throw UsageError(error.description)
        }
        let directory = try ContactDirectory.load(contentsOf: URL(fileURLWithPath: files[0]), normalizer: normalizer)
        if json { return try printJSON(directory, match: match.map { Handle(kind: kind ?? .phoneNumber, value: $0) }, normalizer) }
        print("\(directory.count) contact\(directory.count == 1 ? "" : "s") loaded from \(files[0])")
        for conflict in directory.conflicts { print("warning: \(conflict)") }
        guard let match else {
            for contact in directory.contacts {
                print("  \(contact.name): " + contact.handles.map(\.description).joined(separator: ", "))
            }
            return .ok
        }
        let handle = Handle(kind: kind ?? .phoneNumber, value: match)
        guard let normalized = normalizer.normalize(handle) else {
            print("\(handle): not a usable \(handle.kind) value; it matches nothing")
            return .failure
        }
        if let contact = directory.contact(for: handle) {
            print("\(handle) → \(normalized) → \(contact.name)")
            return .ok
        }
        print("\(handle) → \(normalized) → no contact")
        return .failure
    }

    /// `--json`: the contacts, the conflicts, and the match (exit 1 when nothing matches).
    private static func printJSON(_ directory: ContactDirectory, match: Handle?, _ normalizer: HandleNormalizer) throws -> ExitCode {
        struct Output: Encodable {
            let contacts: [Contact]
            let conflicts: [String]
            let match: Match?
        }
        struct Match: Encodable {
            let handle: Handle
            let normalized: String?
            let contact: String?
        }
        let found = match.map { Match(handle: $0, normalized: normalizer.normalize($0)?.value, contact: directory.contact(for: $0)?.name) }
        print(try jsonLine(Output(contacts: directory.contacts, conflicts: directory.conflicts.map(\.description), match: found)))
        return match == nil || found?.contact != nil ? .ok : .failure
    }
}
