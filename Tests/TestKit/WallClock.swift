import AsyncSignals

/// A Unix-seconds wall clock the test moves; shared by a Sandbox and a session so token expiry is
/// driven by the test, not by waiting.
public final class WallClock: Sendable {
    private let seconds: Locked<Double>

    /// Creates a clock at `start` (default: a fixed moment in 2030).
    public init(start: Double = 1_900_000_000) {
        seconds = Locked(start)
    }

    /// The current time.
    public var now: Double { seconds.withLock { $0 } }

    /// Moves time forward.
    public func advance(by delta: Double) {
        seconds.withLock { $0 += delta }
    }
}
