/// `sync.*`: the executor.
public struct SyncConfiguration: Sendable, Hashable {
    /// Attempts before a job becomes a dead letter.
    public var maximumAttempts = 8
    /// Orders per page in a full sync.
    public var pageSize = 500
    /// Dead letters kept at most; the oldest beyond are removed (issue 38).
    public var deadLetterLimit = 10_000

    /// The built-in defaults.
    public init() {}

    /// Reads and validates `sync.max_attempts`, `page_size` and `dead_letter_limit`.
    public init(reading section: ConfigurationSection) throws(ConfigurationError) {
        maximumAttempts = try section.integer("max_attempts", minimum: 1, maximum: 1_000, default: maximumAttempts)
        pageSize = try section.integer("page_size", minimum: 1, maximum: 100_000, default: pageSize)
        deadLetterLimit = try section.integer("dead_letter_limit", minimum: 1, maximum: 10_000_000, default: deadLetterLimit)
    }
}
