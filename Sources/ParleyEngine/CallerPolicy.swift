import ConversationKit

/// Who may ring us (`parleyd --accept-from`). A caller it does not admit is refused with 403 before the
/// conversation manager or the history sees the call, so spam INVITEs never become missed calls.
public enum CallerPolicy: Sendable {
    /// Anyone (the default).
    case anyone
    /// Callers one of the contacts names (the contacts as they are now: reloads count).
    case contacts(ContactBook)
    /// Callers among these handles, matched by Parley's rules (phone numbers in any written form).
    case only([Handle], HandleNormalizer)

    /// Whether `caller` may ring.
    public func admits(_ caller: Handle) -> Bool {
        switch self {
        case .anyone:
            return true
        case .contacts(let book):
            return book.contactName(for: caller) != nil
        case .only(let handles, let normalizer):
            guard let key = normalizer.normalize(caller) else { return false }
            return handles.contains { normalizer.normalize($0) == key }
        }
    }
}
