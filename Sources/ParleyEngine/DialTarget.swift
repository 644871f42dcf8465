import ConversationKit
import Foundation
import SIPMessages

/// What a person typed into a dial field, checked before anything is started: a SIP URI (`sip:`, `sips:`, or
/// `user@host`), a `tel:` URI or a phone number (digits with `+` and separators), dialled at the phone domain.
/// A target that cannot be called is refused here, so it never becomes a conversation or a history record.
public enum DialTarget {
    /// The handle to start a call to `text`, or why it cannot be called.
    public static func handle(for text: String, configuration: EngineConfiguration) -> Result<Handle, DialTargetError> {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        guard !trimmed.isEmpty else { return .failure(DialTargetError("Say whom to call.")) }
        guard let handle = parse(trimmed) else {
            return .failure(DialTargetError("\(trimmed.debugDescription) is not a SIP address or a phone number."))
        }
        switch HandleMapping.uri(for: handle, phoneDomain: configuration.effectivePhoneDomain) {
        case .success: return .success(handle)
        case .failure(let problem):
            if handle.kind == .phoneNumber, configuration.effectivePhoneDomain == nil {
                return .failure(DialTargetError(
                    "Can't dial the number \(handle.value): no phone domain (start parleyd with --phone-domain or --registrar).",
                    technical: problem.description))
            }
            return .failure(DialTargetError("\(trimmed.debugDescription) cannot be called.", technical: problem.description))
        }
    }
}

extension DialTarget {
    /// The handle `text` names — a `tel:` URI or a phone number, else a SIP URI (`sip:` may be left out) — whether
    /// or not it can be dialled from here; nil when it is neither. What `contact` lookups and history filters use.
    public static func parse(_ text: String) -> Handle? {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        let lowered = trimmed.lowercased()
        if lowered.hasPrefix("tel:") {
            let number = String(trimmed.dropFirst(4).prefix { $0 != ";" })
            return number.isEmpty ? nil : Handle(kind: .phoneNumber, value: number, displayName: number)
        }
        if HandleNormalizer.looksLikeTelephoneNumber(trimmed, separators: " -.()") {
            return Handle(kind: .phoneNumber, value: trimmed, displayName: trimmed)
        }
        let written = lowered.hasPrefix("sip:") || lowered.hasPrefix("sips:") ? trimmed : "sip:" + trimmed
        guard let uri = SIPURI(written), uri.isSIP, uri.scheme == "sip" || uri.scheme == "sips", !uri.host.isEmpty,
            uri.user?.isEmpty != true
        else { return nil }
        return HandleMapping.handle(for: SIPAddress(uri: uri))
    }
}

extension DialTarget {
    /// The handles a contact lookup of `text` tries, in order: with `kind`, the value read as that kind; without,
    /// `mailto:` is an email address, `tel:` and numbers are phone numbers, `sip:`/`sips:` URIs read as callers are
    /// (``parse(_:)``), and a bare `user@host` is an email address first, then the SIP URI `sip:user@host`.
    public static func lookupCandidates(for text: String, kind: Handle.Kind?) -> [Handle] {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        let lowered = trimmed.lowercased()
        let email = lowered.hasPrefix("mailto:") ? String(trimmed.dropFirst(7)) : trimmed
        switch kind {
        case .phoneNumber?:
            let number = lowered.hasPrefix("tel:") ? String(trimmed.dropFirst(4)) : trimmed
            return [Handle(kind: .phoneNumber, value: number, displayName: number)]
        case .emailAddress?:
            return [Handle(kind: .emailAddress, value: email, displayName: email)]
        case .generic?:
            return [Handle(kind: .generic, value: trimmed, displayName: trimmed)]
        case nil:
            if lowered.hasPrefix("mailto:") { return [Handle(kind: .emailAddress, value: email, displayName: email)] }
            let parsed = parse(trimmed)
            let isBareAddress = !lowered.hasPrefix("sip:") && !lowered.hasPrefix("sips:") && !lowered.hasPrefix("tel:")
                && trimmed.contains("@") && parsed?.kind != .phoneNumber
            if isBareAddress {
                return [Handle(kind: .emailAddress, value: trimmed, displayName: trimmed)] + (parsed.map { [$0] } ?? [])
            }
            return [parsed ?? Handle(kind: .generic, value: trimmed, displayName: trimmed)]
        }
    }
}

/// Why a dial target cannot be called: a sentence for people, and the engine's own words.
public struct DialTargetError: Error, Sendable, CustomStringConvertible {
    /// For a toast.
    public let message: String
    /// For a log.
    public let technical: String?

    init(_ message: String, technical: String? = nil) {
        self.message = message
        self.technical = technical
    }

    /// The message.
    public var description: String { message }
}

extension EngineConfiguration {
    /// Where phone numbers are dialled: `phoneDomain`, else the registrar's domain (the address of record's host).
    public var effectivePhoneDomain: String? {
        phoneDomain ?? registration.map { $0.addressOfRecord.host }.flatMap { $0.isEmpty ? nil : $0 }
    }
}
