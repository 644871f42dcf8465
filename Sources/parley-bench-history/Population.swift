import ConversationKit
import Foundation

/// One remote party of the generated history: the value the store matches on, the forms calls record it in,
/// and other forms of the same value, never stored, that a lookup types in.
struct Person {
    let kind: Handle.Kind
    let normalized: String
    let storedForms: [String]
    let queryForms: [String]
    let displayName: String?

    /// A handle as one call recorded it.
    func recordedHandle(using random: inout SplitMix64) -> Handle {
        Handle(kind: kind, value: random.pick(storedForms), displayName: displayName)
    }

    /// The handle a lookup passes: another written form (generic SIP URIs match exactly, so they are the same).
    func queryHandle(using random: inout SplitMix64) -> Handle {
        Handle(kind: kind, value: random.pick(queryForms))
    }
}

/// The people the user talks to: phone numbers (North American and British, each recorded in one to three
/// written forms), email addresses (mixed case) and SIP URIs.
enum Population {
    static let firstNames = [
        "Ada", "Alan", "Alice", "Amara", "Ana", "Ben", "Bruno", "Carla", "Chen", "Dana", "Diego", "Elena", "Emil",
        "Fatima", "Felix", "Grace", "Hana", "Hugo", "Ines", "Ivan", "Jana", "Jonas", "Kai", "Lara", "Leo", "Lina",
        "Marta", "Maya", "Nadia", "Noah", "Olga", "Omar", "Paula", "Priya", "Ravi", "Rosa", "Sam", "Sofia",
        "Tariq", "Tom", "Uma", "Vera", "Wei", "Yara", "Zoe",
    ]
    static let lastNames = [
        "Adams", "Baker", "Costa", "Dubois", "Evans", "Fischer", "Garcia", "Hansen", "Ito", "Jensen", "Kim",
        "Lopez", "Martin", "Novak", "Okafor", "Petrov", "Quinn", "Rossi", "Silva", "Tanaka", "Ueda", "Varga",
        "Weber", "Xu", "Yilmaz", "Zhang", "Moreau", "Nilsson", "Kowalski", "Murphy",
    ]
    static let areaCodes = ["212", "303", "312", "415", "503", "512", "617", "646", "702", "206", "404", "713"]
    static let mailDomains = ["example.com", "mail.example.org", "corp.example.net", "post.example.de"]

    /// `count` distinct people; every written form is checked against `normalizer`.
    static func make(count: Int, normalizer: HandleNormalizer, random: inout SplitMix64) -> [Person] {
        var people: [Person] = []
        var taken: Set<String> = []
        while people.count < count {
            let first = random.pick(firstNames), last = random.pick(lastNames)
            let roll = random.unit()
            let person: Person
            if roll < 0.75 {
                person = phone(name: random.chance(0.7) ? "\(first) \(last)" : nil, random: &random)
            } else if roll < 0.90 {
                person = email(first: first, last: last, random: &random)
            } else {
                person = sip(first: first, last: last, random: &random)
            }
            guard taken.insert("\(person.kind.rawValue):\(person.normalized)").inserted else { continue }
            for form in person.storedForms + person.queryForms {
                precondition(
                    normalizer.normalizedValue(kind: person.kind, value: form) == person.normalized,
                    "generated form '\(form)' does not normalise to \(person.normalized)")
            }
            if person.kind != .generic {
                precondition(Set(person.storedForms).isDisjoint(with: person.queryForms))
            }
            people.append(person)
        }
        return people
    }

    private static func digits(_ count: Int, random: inout SplitMix64) -> String {
        String((0..<count).map { _ in Character(String(random.below(10))) })
    }

    /// A subset of 1…3 of `forms` (order kept), for how one person's calls happen to be written.
    private static func someOf(_ forms: [String], random: inout SplitMix64) -> [String] {
        let wanted = 1 + random.below(min(3, forms.count))
        var chosen = Set<Int>()
        while chosen.count < wanted { chosen.insert(random.below(forms.count)) }
        return chosen.sorted().map { forms[$0] }
    }

    private static func phone(name: String?, random: inout SplitMix64) -> Person {
        if random.chance(0.9) {
            let area = random.pick(areaCodes)
            let exchange = String(200 + random.below(800))
            let line = digits(4, random: &random)
            return Person(
                kind: .phoneNumber, normalized: "+1\(area)\(exchange)\(line)",
                storedForms: someOf(
                    ["+1\(area)\(exchange)\(line)", "(\(area)) \(exchange)-\(line)", "\(area)-\(exchange)-\(line)",
                     "1\(area)\(exchange)\(line)"], random: &random),
                queryForms: ["tel:+1-\(area)-\(exchange)-\(line)", "\(area).\(exchange).\(line)",
                             "001 \(area) \(exchange) \(line)", "1 (\(area)) \(exchange)-\(line)"],
                displayName: name)
        }
        let block = "79\(digits(2, random: &random))", line = digits(4, random: &random)
        return Person(
            kind: .phoneNumber, normalized: "+4420\(block)\(line)",
            storedForms: someOf(["+4420\(block)\(line)", "+44 20 \(block) \(line)"], random: &random),
            queryForms: ["0044 20 \(block) \(line)", "tel:+44-20-\(block)-\(line)"],
            displayName: name)
    }

    private static func email(first: String, last: String, random: inout SplitMix64) -> Person {
        let domain = random.pick(mailDomains)
        let suffix = random.chance(0.3) ? String(random.below(100)) : ""
        let local = "\(first).\(last)\(suffix)"
        let capitalisedDomain = domain.prefix(1).uppercased() + domain.dropFirst()
        return Person(
            kind: .emailAddress, normalized: "\(local)@\(domain)".lowercased(),
            storedForms: someOf(["\(local)@\(capitalisedDomain)", "\(local)@\(domain)".lowercased()], random: &random),
            queryForms: ["mailto:\(local)@\(domain)".uppercased(), " \(local.lowercased())@\(domain.uppercased()) "],
            displayName: "\(first) \(last)")
    }

    private static func sip(first: String, last: String, random: inout SplitMix64) -> Person {
        let user = random.chance(0.5) ? "\(first).\(last)".lowercased() : "ext\(digits(4, random: &random))"
        let uri = "sip:\(user)@pbx\(random.below(4)).example.net"
        return Person(
            kind: .generic, normalized: uri, storedForms: [uri], queryForms: [uri],
            displayName: random.chance(0.5) ? "\(first) \(last)" : nil)
    }
}
