/// `stream.*`: reconnect policy of the event stream.
public struct StreamConfiguration: Sendable, Hashable {
    /// The first reconnect delay.
    public var initialDelay = Duration.milliseconds(1_000)
    /// The largest reconnect delay.
    public var maximumDelay = Duration.milliseconds(30_000)
    /// A connection up this long resets the backoff.
    public var resetAfter = Duration.seconds(60)
    /// No byte for this long drops the connection.
    public var idleTimeout = Duration.milliseconds(45_000)

    /// The built-in defaults.
    public init() {}

    /// Reads and validates `stream.initial_delay_ms`, `max_delay_ms`,
    /// `reset_after_s` and `idle_timeout_ms`.
    public init(reading section: ConfigurationSection) throws(ConfigurationError) {
        initialDelay = try section.milliseconds("initial_delay_ms", minimum: 0, default: initialDelay)
        maximumDelay = try section.milliseconds("max_delay_ms", minimum: 1, default: maximumDelay)
        resetAfter = try section.seconds("reset_after_s", minimum: 1, default: resetAfter)
        idleTimeout = try section.milliseconds("idle_timeout_ms", minimum: 1, default: idleTimeout)
    }
}
