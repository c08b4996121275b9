import EventStream
/// `stream.*`: reconnect policy of the event stream.
public struct StreamConfiguration: Sendable, Hashable {
    /// The event source's own defaults, which these keys start from.
    private static let source = EventSourceConfiguration(url: "")

    /// The first reconnect delay.
    public var initialDelay = source.initialDelay
    /// The largest reconnect delay.
    public var maximumDelay = source.maximumDelay
    /// A connection up this long resets the backoff.
    public var resetAfter = source.resetAfter
    /// No byte for this long drops the connection (the event source's default is never nil).
    public var idleTimeout = source.idleTimeout ?? .zero

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
