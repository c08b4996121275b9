/// Exponential delay: `base` doubled per attempt up to `maximum`, optionally jittered within
/// [d/2, d]. Doubling stops at the maximum, so no attempt count overflows.
public enum ExponentialDelay {
    /// The delay before retry number `attempt` (0 for the first): `base × 2^attempt`, at most
    /// `maximum` (or `base` when that is larger). With `unit`, a random number in [0, 1] (clamped),
    /// the delay is placed within [d/2, d].
    public static func delay(attempt: Int, base: Duration, maximum: Duration, unit: Double? = nil) -> Duration {
        let base = max(.zero, base)
        let ceiling = max(maximum, base)
        var delay = base
        var doubled = 0
        while doubled < attempt && delay < ceiling && delay > .zero {
            delay = delay * 2
            doubled += 1
        }
        delay = min(delay, ceiling)
        guard let unit else { return delay }
        return delay * (0.5 + 0.5 * min(max(unit, 0), 1))
    }
}
