import Foundation

/// The bytes a device signs, domain-separated so a signature made for one purpose, collaboration, group, nonce or
/// verifier proves nothing for another (docs/collaboration.md, "Signed statements"):
///
///     "parley-collab-proof-v1"    NUL collaborationIdentifier NUL group NUL nonceHex NUL expires NUL verifier
///     "parley-identity-update-v1" NUL oldRootHex              NUL newRootHex NUL nonceHex NUL expires NUL verifier
///
/// `expires` is RFC 3339 UTC to the second (`2026-12-01T10:01:00Z`). No field may hold a NUL.
public struct ProofStatement: Sendable, Hashable {
    /// What a signature over the statement vouches for.
    public enum Purpose: Sendable, Hashable {
        /// "This device belongs to a person invited to this collaboration, bound to this group."
        case collaboration(identifier: String, group: String)
        /// "The person whose root was `old` now has the devices of `new`."
        case identityUpdate(old: PersonIdentity, new: PersonIdentity)
    }

    /// The domain string of a proof of collaboration membership.
    public static let collaborationDomain = "parley-collab-proof-v1"
    /// The domain string of a device-set change.
    public static let identityUpdateDomain = "parley-identity-update-v1"

    public let purpose: Purpose
    /// The verifier's 32-byte single-use nonce.
    public let nonce: [UInt8]
    /// When the nonce expires (whole seconds).
    public let expires: Date
    /// Who checks the proof (the owner's SIP address).
    public let verifier: String

    /// A statement; nil when a text field holds a NUL (it would make two statements read alike).
    public init?(purpose: Purpose, nonce: [UInt8], expires: Date, verifier: String) {
        if case .collaboration(let identifier, let group) = purpose, identifier.utf8.contains(0) || group.utf8.contains(0) {
            return nil
        }
        guard !verifier.utf8.contains(0) else { return nil }
        self.purpose = purpose
        self.nonce = nonce
        self.expires = Date(timeIntervalSince1970: expires.timeIntervalSince1970.rounded(.down))
        self.verifier = verifier
    }

    /// The signed bytes.
    public var bytes: [UInt8] {
        let fields: [String]
        switch purpose {
        case .collaboration(let identifier, let group):
            fields = [Self.collaborationDomain, identifier, group]
        case .identityUpdate(let old, let new):
            fields = [Self.identityUpdateDomain, old.hex, new.hex]
        }
        let all = fields + [Hex.encode(nonce), Self.timestamp(expires), verifier]
        return Array(all.joined(separator: "\u{0}").utf8)
    }

    /// The domain string of a member's announcement of its person root in a group session.
    public static let announcementDomain = "parley-identity-announce-v1"

    /// What a device signs to announce its person root as one participant of one session:
    /// `"parley-identity-announce-v1" NUL session NUL participant NUL rootHex`. Bound to the participant id the host
    /// gave it, so another member cannot replay it as theirs; nil when a field holds a NUL.
    public static func announcement(session: String, participant: String, root: PersonIdentity) -> [UInt8]? {
        guard !session.utf8.contains(0), !participant.utf8.contains(0) else { return nil }
        return Array([announcementDomain, session, participant, root.hex].joined(separator: "\u{0}").utf8)
    }

    /// RFC 3339 UTC to the second.
    public static func timestamp(_ date: Date) -> String {
        Date(timeIntervalSince1970: date.timeIntervalSince1970.rounded(.down)).formatted(.iso8601)
    }

    /// The date of an RFC 3339 UTC timestamp to the second, or nil.
    public static func date(_ text: String) -> Date? {
        guard text.utf8.count == 20, text.hasSuffix("Z") else { return nil }
        return try? Date(text, strategy: .iso8601)
    }
}
