import Foundation
import SIPMessages

/// Where incoming calls go instead of ringing here: answered `302 Moved Temporarily` with the target as Contact
/// (RFC 3261 §21.3.3), which the caller's phone or proxy follows (Parley follows them too: ``OutgoingInvite``).
/// A redirect rather than a call we place ourselves: the caller's side keeps the call and its media, we hold no
/// second leg, and a caller that does not follow redirects hears the call fail as it would at a busy phone.
///
/// ```
///   new INVITE ──always set──► 302 (before it rings)
///        │ ──do-not-disturb on, or over the live-call limit, and busy set──► 302 (else 486 / 503)
///        ▼
///   ringing ──noAnswer set: not answered within noAnswerAfter──► 302 (the conversation ends `forwarded`)
/// ```
public struct CallForwarding: Sendable, Hashable, CustomStringConvertible {
    /// Every call, before it rings.
    public var always: SIPURI?
    /// Calls refused as busy: while do-not-disturb is on, or over the live-call limit.
    public var busy: SIPURI?
    /// Calls not answered within ``noAnswerAfter``.
    public var noAnswer: SIPURI?
    /// How long a call rings before ``noAnswer`` takes it.
    public var noAnswerAfter: Duration

    /// How long a call rings before it is forwarded on no answer, unless told.
    public static let defaultNoAnswerAfter = Duration.seconds(20)

    /// Forwarding as given; none by default.
    public init(always: SIPURI? = nil, busy: SIPURI? = nil, noAnswer: SIPURI? = nil, noAnswerAfter: Duration = defaultNoAnswerAfter) {
        self.always = always
        self.busy = busy
        self.noAnswer = noAnswer
        self.noAnswerAfter = noAnswerAfter
    }

    /// A forwarding target from what a user typed: a `sip:`/`sips:` URI, or `user@host` (taken as `sip:`); nil for
    /// anything else (a number needs its domain: write it as a URI; a bare word is no host).
    public static func target(_ text: String) -> SIPURI? {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        guard !trimmed.isEmpty, trimmed.count <= 512 else { return nil }
        let hasScheme = trimmed.lowercased().hasPrefix("sip:") || trimmed.lowercased().hasPrefix("sips:")
        // Without a scheme it must read user@host: a bare word is a name typed, not a host.
        guard hasScheme || trimmed.contains("@"), let uri = SIPURI(hasScheme ? trimmed : "sip:" + trimmed), uri.isSIP,
            !uri.host.isEmpty
        else { return nil }
        return uri
    }

    /// The three rules, for frontends that set them by name.
    public enum Rule: String, Sendable, CaseIterable {
        /// ``always``.
        case always
        /// ``busy``.
        case busy
        /// ``noAnswer``.
        case noAnswer
    }

    /// A rule's target as text (nil: off).
    public func target(of rule: Rule) -> String? {
        switch rule {
        case .always: always?.description
        case .busy: busy?.description
        case .noAnswer: noAnswer?.description
        }
    }

    /// Sets a rule's target from what a user typed (``target(_:)``; empty: off); false, changing nothing, when it is
    /// not a SIP URI.
    public mutating func setTarget(_ text: String, of rule: Rule) -> Bool {
        let uri = text.isEmpty ? nil : Self.target(text)
        guard text.isEmpty || uri != nil else { return false }
        switch rule {
        case .always: always = uri
        case .busy: busy = uri
        case .noAnswer: noAnswer = uri
        }
        return true
    }

    /// Whether no call is forwarded.
    public var isOff: Bool { always == nil && busy == nil && noAnswer == nil }

    /// For the log: each rule that is set.
    public var description: String {
        guard !isOff else { return "no forwarding" }
        var rules: [String] = []
        if let always { rules.append("every call to \(always)") }
        if let busy { rules.append("busy to \(busy)") }
        if let noAnswer { rules.append("unanswered after \(noAnswerAfter.components.seconds) s to \(noAnswer)") }
        return "forwarding " + rules.joined(separator: ", ")
    }
}
