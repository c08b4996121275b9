/// `sync.*`: the executor.
public struct SyncConfiguration: Sendable, Hashable {
    /// Attempts before a job becomes a dead letter.
    public var maximumAttempts = 8
    /// Orders per page in a full sync.
    public var pageSize = 500

    /// The built-in defaults.
    public init() {}

    /// Reads and validates `sync.max_attempts` and `page_size`.
    public init(reading section: ConfigurationSection) throws(ConfigurationError) {
        maximumAttempts = try section.integer("max_attempts", minimum: 1, maximum: 1_000, default: maximumAttempts)
        pageSize = try section.integer("page_size", minimum: 1, maximum: 100_000, default: pageSize)
    }
}
