/// RFC 3261 §14: what a user agent does when INVITEs of one dialog cross ("glare").
///
/// The decisions themselves live in `SIPDialog`: `receive(request:)` answers an INVITE that arrives while ours is in
/// progress with `.rejectRequestPending` (491), and one that arrives while the peer's previous INVITE is unanswered
/// with `.rejectRetryLater` (500 with Retry-After). This type holds the random waits, drawn from a generator the caller
/// passes so that tests can make them deterministic.
public enum ReINVITEGlare {
    /// The wait before retrying after a 491 when we chose the Call-ID (we are the caller): 2.1 to 4 s.
    public static let callIDOwnerRetryDelays: ClosedRange<Duration> = .milliseconds(2_100) ... .seconds(4)
    /// The wait before retrying after a 491 when the peer chose the Call-ID: 0 to 2 s.
    public static let otherRetryDelays: ClosedRange<Duration> = .zero ... .seconds(2)
    /// The Retry-After of a 500 to an overlapping INVITE: 0 to 10 s (RFC 3261 §14.2).
    public static let retryAfterSeconds: ClosedRange<Int> = 0...10

    /// How long to wait before sending our INVITE again after it got 491 (RFC 3261 §14.1): a random time in units of
    /// 10 ms, within `callIDOwnerRetryDelays` when `isCallIDOwner` (we generated the dialog's Call-ID), else within
    /// `otherRetryDelays`.
    public static func retryDelay(
        isCallIDOwner: Bool, using generator: inout some RandomNumberGenerator
    ) -> Duration {
        let range = isCallIDOwner ? callIDOwnerRetryDelays : otherRetryDelays
        let lowest = Int(range.lowerBound / .milliseconds(10))
        let highest = Int(range.upperBound / .milliseconds(10))
        return .milliseconds(10 * Int.random(in: lowest...highest, using: &generator))
    }

    /// The Retry-After value, in whole seconds, of the 500 that answers an INVITE arriving while the peer's previous
    /// INVITE is unanswered (RFC 3261 §14.2).
    public static func retryAfter(using generator: inout some RandomNumberGenerator) -> Int {
        Int.random(in: retryAfterSeconds, using: &generator)
    }
}
