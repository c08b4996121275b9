import CheckedInput

/// The reconnect delay policy: exponential from a base to a maximum, jittered within [d/2, d],
/// reset once a connection has stayed up long enough. A pure value; the driver supplies time and
/// randomness.
public struct Backoff: Sendable, Hashable {
    /// The base delay before the first retry; a server's `retry:` replaces it.
    public private(set) var base: Duration
    /// The largest delay.
    public let maximum: Duration
    /// A connection up at least this long resets the failure count.
    public let resetAfter: Duration
    /// Consecutive failed or short-lived connections.
    public private(set) var failures = 0

    /// Creates a policy.
    public init(initial: Duration, maximum: Duration, resetAfter: Duration) {
        self.base = max(.zero, initial)
        self.maximum = max(.zero, maximum)
        self.resetAfter = resetAfter
    }

    /// A server's `retry:` field: the new base delay (SSE-RULES 13: it persists across connections),
    /// clamped to the maximum so that no value from the server parks the stream past the operator's
    /// `stream.max_delay_ms`.
    public mutating func serverRequested(milliseconds: Int) {
        base = Checked.duration(milliseconds: Int64(clamping: milliseconds), maximum: maximum)
    }

    /// A connection that had opened ended after `uptime`: a long one resets the count.
    public mutating func connectionEnded(uptime: Duration) {
        if uptime >= resetAfter { failures = 0 }
    }

    /// The delay before the next attempt. `unit` is a random number in [0, 1] that places the
    /// delay within [d/2, d]; `retryAfter` (from a 429/503) is a floor.
    public mutating func nextDelay(unit: Double, retryAfter: Duration? = nil) -> Duration {
        let delay = ExponentialDelay.delay(attempt: failures, base: base, maximum: maximum, unit: unit)
        failures = min(failures, 1 << 20) + 1
        if let retryAfter { return max(delay, retryAfter) }
        return delay
    }
}
