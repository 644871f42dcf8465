/// How often each D-Bus client may call (pure): a token bucket per sender, Dial dearer than the rest, at most
/// `maxClients` senders remembered (the one heard from least recently is forgotten first). Times are seconds on any
/// monotonic clock.
struct ClientRateLimit {
    /// Calls a sender may make per second, and in a burst.
    let perSecond: Double
    let burst: Double
    /// What one Dial costs, in calls.
    let dialCost: Double
    let maxClients: Int
    private var buckets: [String: (tokens: Double, at: Double)] = [:]

    init(perSecond: Double = 20, burst: Double = 40, dialCost: Double = 8, maxClients: Int = 256) {
        self.perSecond = perSecond
        self.burst = burst
        self.dialCost = dialCost
        self.maxClients = maxClients
    }

    /// Whether `sender` may make a call of `method` at `now`; takes its cost when it may.
    mutating func allow(_ sender: String, method: String, at now: Double) -> Bool {
        let cost = method == "Dial" ? dialCost : 1
        var bucket = buckets[sender] ?? (tokens: burst, at: now)
        bucket.tokens = min(burst, bucket.tokens + max(0, now - bucket.at) * perSecond)
        bucket.at = now
        let allowed = bucket.tokens >= cost
        if allowed { bucket.tokens -= cost }
        if buckets[sender] == nil, buckets.count >= maxClients,
            let oldest = buckets.min(by: { $0.value.at < $1.value.at })?.key
        {
            buckets.removeValue(forKey: oldest)
        }
        buckets[sender] = bucket
        return allowed
    }

    /// The sentence a refused sender gets.
    var refusal: String {
        "Too many calls from this client: at most \(Int(perSecond)) a second (a Dial counts \(Int(dialCost))); try again in a moment."
    }
}
