import OrderSync
/// `sync.*`: the executor.
public struct SyncConfiguration: Sendable, Hashable {
    /// The executor's own defaults, which these keys start from.
    private static let executor = SyncExecutor.Configuration()

    /// Attempts before a job becomes a dead letter.
    public var maximumAttempts = executor.maximumAttempts
    /// Orders per page in a full sync.
    public var pageSize = executor.pageSize
    /// Dead letters kept at most; the oldest beyond are removed (DESIGN §13).
    public var deadLetterLimit = 10_000
    /// The first retry delay of a job that failed for its own order; doubles per attempt.
    public var retryBase = executor.retryBase
    /// The longest retry delay, and the longest `Retry-After` honoured.
    public var retryMaximum = executor.retryMaximum
    /// While the backend is unavailable, probes are at most this far apart (DESIGN §8 "Sync").
    public var outageProbeMaximum = executor.probeMaximum

    /// The built-in defaults.
    public init() {}

    /// Reads and validates `sync.max_attempts`, `page_size`, `dead_letter_limit`, `retry_initial_ms`,
    /// `retry_max_s` and `outage_probe_max_s`.
    public init(reading section: ConfigurationSection) throws(ConfigurationError) {
        maximumAttempts = try section.integer("max_attempts", minimum: 1, maximum: 1_000, default: maximumAttempts)
        pageSize = try section.integer("page_size", minimum: 1, maximum: 100_000, default: pageSize)
        deadLetterLimit = try section.integer("dead_letter_limit", minimum: 1, maximum: 10_000_000, default: deadLetterLimit)
        retryBase = try section.milliseconds("retry_initial_ms", minimum: 1, maximum: 3_600_000, default: retryBase)
        retryMaximum = try section.seconds("retry_max_s", minimum: 1, maximum: 86_400, default: retryMaximum)
        outageProbeMaximum = try section.seconds("outage_probe_max_s", minimum: 1, maximum: 3_600, default: outageProbeMaximum)
    }
}
