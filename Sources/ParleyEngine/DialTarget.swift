import ConversationKit
import Foundation
import SIPMessages

/// What a person typed into a dial field, checked before anything is started: a SIP URI (`sip:`, `sips:`, or
/// `user@host`), a `tel:` URI or a phone number (digits with `+` and separators), dialled at the phone domain, or
/// any of these behind `callto:` (the scheme desktops and web pages still hand to phone apps; ``unwrapped(_:)``).
/// A target that cannot be called is refused here, so it never becomes a conversation or a history record.
/// A SIP URI's `transport` parameter is honoured: `tcp` and `tls` stay in the handle (the call, its history record
/// and a redial go over that transport), `udp` is the default, and any other (`sctp`, `ws`…) is refused, since
/// parleyd runs only UDP, TCP and TLS.
public enum DialTarget {
    /// The transports parleyd places calls over, as a URI's `transport` parameter names them.
    public static let transports = ["udp", "tcp", "tls"]

    /// The handle to start a call to `text` through `account` (nil: the default one, the first, if any), or why it
    /// cannot be called.
    public static func handle(
        for text: String, through account: Account? = nil, configuration: EngineConfiguration
    ) -> Result<Handle, DialTargetError> {
        let trimmed = unwrapped(text)
        guard !trimmed.isEmpty else { return .failure(DialTargetError("Say whom to call.")) }
        let account = account ?? configuration.accounts.first
        if let domain = account?.domain, let user = bareUser(trimmed) {
            // Through an account, a bare name is a user at its domain, as a phone dials it.
            let value = "\(account?.addressOfRecord.scheme == "sips" ? "sips" : "sip"):\(user)@\(domain)"
            return .success(Handle(kind: .generic, value: value, displayName: value))
        }
        guard var handle = parse(trimmed) else {
            return .failure(DialTargetError("\(trimmed.debugDescription) is not a SIP address or a phone number."))
        }
        if let transport = sipURI(trimmed)?.transport?.lowercased() {
            if let problem = transportProblem(transport) { return .failure(problem) }
            if transport != "udp" { handle = keeping(transport: transport, in: handle) }
        }
        switch HandleMapping.uri(for: handle, phoneDomain: configuration.phoneDomain(through: account)) {
        case .success: return .success(handle)
        case .failure(let problem):
            if handle.kind == .phoneNumber, configuration.phoneDomain(through: account) == nil {
                return .failure(DialTargetError(
                    "Can't dial the number \(handle.value): no phone domain (start parleyd with --phone-domain or --register).",
                    technical: problem.description))
            }
            return .failure(DialTargetError("\(trimmed.debugDescription) cannot be called.", technical: problem.description))
        }
    }

    /// `text` when it is a bare user name (`bob`, `alice.smith`): no scheme, no `@`, no port, not a phone number,
    /// only the characters of a SIP user part; nil otherwise.
    static func bareUser(_ text: String) -> String? {
        let lowered = text.lowercased()
        guard !lowered.hasPrefix("sip:"), !lowered.hasPrefix("sips:"), !lowered.hasPrefix("tel:"),
            !HandleNormalizer.looksLikeTelephoneNumber(text, separators: " -.()"),
            text.first?.isLetter == true,
            text.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "-_.!~*'()".contains($0)) })
        else { return nil }
        return text
    }

    /// Why a call cannot go over `transport` (a URI's `transport` parameter, any case), or nil when parleyd runs it.
    public static func transportProblem(_ transport: String) -> DialTargetError? {
        let lowered = transport.lowercased()
        guard !transports.contains(lowered) else { return nil }
        return DialTargetError(
            "Parley can't place calls over \(lowered.uppercased()); use udp, tcp or tls.",
            technical: "transport \(transport) is not supported")
    }

    /// `handle` with `;transport=T` on its URI (the mapping from a SIP address leaves parameters out).
    private static func keeping(transport: String, in handle: Handle) -> Handle {
        let value = handle.value + ";transport=" + transport
        let name = handle.displayName == handle.value ? value : handle.displayName
        return Handle(kind: handle.kind, value: value, displayName: name)
    }
}

extension DialTarget {
    /// The handle `text` names — a `tel:` URI or a phone number, else a SIP URI (`sip:` may be left out) — whether
    /// or not it can be dialled from here; nil when it is neither. What `contact` lookups and history filters use.
    public static func parse(_ text: String) -> Handle? {
        let trimmed = unwrapped(text)
        let lowered = trimmed.lowercased()
        if lowered.hasPrefix("tel:") {
            let number = String(trimmed.dropFirst(4).prefix { $0 != ";" })
            return number.isEmpty ? nil : Handle(kind: .phoneNumber, value: number, displayName: number)
        }
        if HandleNormalizer.looksLikeTelephoneNumber(trimmed, separators: " -.()") {
            return Handle(kind: .phoneNumber, value: trimmed, displayName: trimmed)
        }
        guard let uri = sipURI(trimmed) else { return nil }
        return HandleMapping.handle(for: SIPAddress(uri: uri))
    }

    /// `text` trimmed, what a `callto:` or `callto://` URI names (`callto:+14155550100`, `callto://bob@example.com`),
    /// and a `tel:` or `callto:` value percent-decoded (`tel:%2B1…`, as some browsers hand it over). A SIP URI's own
    /// escapes are left for its parser.
    public static func unwrapped(_ text: String) -> String {
        var trimmed = text.trimmingCharacters(in: .whitespaces)
        let lowered = trimmed.lowercased()
        guard lowered.hasPrefix("callto:") || lowered.hasPrefix("tel:") else { return trimmed }
        if lowered.hasPrefix("callto:") {
            trimmed = String(trimmed.dropFirst(lowered.hasPrefix("callto://") ? 9 : 7))
            if trimmed.hasSuffix("/") { trimmed.removeLast() }
        }
        return (trimmed.removingPercentEncoding ?? trimmed).trimmingCharacters(in: .whitespaces)
    }

    /// `text` (trimmed) as a `sip:` or `sips:` URI with a host (`sip:` may be left out); nil for anything else,
    /// `tel:` URIs and phone numbers included.
    private static func sipURI(_ trimmed: String) -> SIPURI? {
        let lowered = trimmed.lowercased()
        guard !lowered.hasPrefix("tel:"), !HandleNormalizer.looksLikeTelephoneNumber(trimmed, separators: " -.()") else { return nil }
        let written = lowered.hasPrefix("sip:") || lowered.hasPrefix("sips:") ? trimmed : "sip:" + trimmed
        guard let uri = SIPURI(written), uri.isSIP, uri.scheme == "sip" || uri.scheme == "sips", !uri.host.isEmpty,
            uri.user?.isEmpty != true
        else { return nil }
        return uri
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
    /// Where phone numbers are dialled through `account` (nil: through none): its phone domain, else the engine's
    /// `phoneDomain`, else the account's domain (the address of record's host).
    public func phoneDomain(through account: Account?) -> String? {
        account?.phoneDomain ?? phoneDomain ?? account?.domain
    }
}
