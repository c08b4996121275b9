import OrderStore

/// `store.*`: state on disk.
public struct StoreConfiguration: Sendable, Hashable {
    /// The state directory, resolved (see ``ConfigurationLoader``).
    public var stateDirectory = ""
    /// Commit durability.
    public var durability = StoreDurability.normal

    /// The built-in defaults.
    public init() {}

    /// Reads and validates `store.state_dir` (resolved later, see
    /// ``ConfigurationLoader``) and `durability`.
    public init(reading section: ConfigurationSection) throws(ConfigurationError) {
        stateDirectory = section.string("state_dir", default: stateDirectory)
        durability = try section.choice("durability", default: durability)
    }
}
