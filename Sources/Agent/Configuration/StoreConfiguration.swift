public import SQLiteStore
import StoreModel
import PostgresStore

/// Which engine keeps the store (DESIGN §12).
public enum StoreBackend: String, Sendable, Hashable, CaseIterable {
    /// The embedded SQLite file in `store.state_dir` (the default, the fastest path).
    case sqlite
    /// A PostgreSQL database shared by several agents, one leader per account.
    case postgres
}

/// `store.*`: state on disk, or in a shared PostgreSQL database.
public struct StoreConfiguration: Sendable, Hashable {
    /// The state directory, resolved (see ``ConfigurationLoader``). With PostgreSQL it still holds
    /// this agent's credentials and stream status.
    public var stateDirectory = ""
    /// Commit durability (SQLite).
    public var durability = StoreDurability.normal
    /// The engine.
    public var backend = StoreBackend.sqlite
    /// `postgres://USER@HOST:5432/DB?sslmode=require`, never with a password.
    public var postgresURL = ""
    /// A file holding the database password, or "" (then `PGPASSWORD`, else none).
    public var postgresPasswordFile = ""
    /// This agent's partition of a shared database; "" means `auth.identifier`.
    public var account = ""
    /// A follower takes over within this after the leader is gone.
    public var failover = PostgresStoreConfiguration.standardFailover

    /// The built-in defaults.
    public init() {}

    /// Reads and validates `store.state_dir` (resolved later, see ``ConfigurationLoader``),
    /// `durability`, `backend`, `postgres_url` (required with postgres; a password in it is
    /// refused), `postgres_password_file` (readable), `account` and `failover_s`.
    public init(reading section: ConfigurationSection) throws(ConfigurationError) {
        stateDirectory = section.string("state_dir", default: stateDirectory)
        durability = try section.choice("durability", default: durability)
        backend = try section.choice("backend", default: backend)
        postgresURL = section.string("postgres_url", default: postgresURL)
        postgresPasswordFile = try section.readableFile("postgres_password_file", default: postgresPasswordFile)
        account = section.string("account", default: account)
        failover = try section.seconds("failover_s", minimum: 2, maximum: 600, default: failover)
        if !postgresURL.isEmpty {
            do {
                _ = try PostgresStoreConfiguration(url: postgresURL, password: nil, account: account)
            } catch {
                throw ConfigurationError("'store.postgres_url' \(error.message)")
            }
        }
        if backend == .postgres, postgresURL.isEmpty {
            throw ConfigurationError("'store.backend' is postgres but 'store.postgres_url' is not set: "
                + "set it to postgres://USER@HOST:5432/DATABASE?sslmode=require")
        }
    }
}
