import CheckedInput
import Foundation
import NIOSSL
import PostgresNIO

/// Where the PostgreSQL store is and whose part of it this agent keeps (DESIGN §12): read from
/// `store.postgres_url`, the password from `store.postgres_password_file` or `PGPASSWORD`, and
/// `store.account`.
public struct PostgresStoreConfiguration: Sendable {
    /// How the connection is encrypted, as libpq's `sslmode` says.
    public enum SSLMode: String, Sendable, Hashable, CaseIterable {
        /// Plain TCP.
        case disable
        /// TLS when the server offers it, unverified (libpq's default).
        case prefer
        /// TLS or no connection; the certificate is not verified.
        case require
        /// TLS with a certificate signed by a trusted authority, any host name.
        case verifyCA = "verify-ca"
        /// TLS with a trusted certificate for the host connected to.
        case verifyFull = "verify-full"
    }

    /// The server's host name or address.
    public var host: String
    /// The server's port.
    public var port: Int
    /// The role connected as.
    public var username: String
    /// The role's password, never from the URL; nil for trust or peer authentication.
    public var password: String?
    /// The database.
    public var database: String
    /// How the connection is encrypted.
    public var sslMode: SSLMode
    /// This agent's partition of the database: every row it reads or writes carries it.
    public var account: String
    /// Connections in the pool (the leader's dedicated connection is not one of them).
    public var maximumConnections: Int
    /// Longest a statement may run before the server cancels it; a dead peer is noticed by then.
    public var statementTimeout: Duration
    /// How long connecting may take.
    public var connectTimeout: Duration
    /// A follower takes over within this after the leader is gone (`store.failover_s`): also how
    /// long the server lets a transaction sit idle before it ends it.
    public var failover: Duration

    /// The deadline of one database round trip — a transaction or a read, the wait for its
    /// connection included: `failover_s`, so a push is answered within it even when the network
    /// silently stops passing packets, and a connection that missed it is discarded.
    public var roundTrip: Duration { failover }

    /// The deadline of the few round trips that may legitimately take longer (migrating the schema,
    /// pruning the change log): twice the longer of the statement timeout and `failover_s`.
    public var longRoundTrip: Duration { max(statementTimeout, failover) * 2 }

    /// How long a silent database or leader is waited for unless told otherwise (`store.failover_s`).
    public static let standardFailover = Duration.seconds(5)

    /// Creates a configuration from its parts.
    public init(
        host: String, port: Int = 5432, username: String, password: String?, database: String,
        sslMode: SSLMode = .prefer, account: String, maximumConnections: Int = 8,
        statementTimeout: Duration = .seconds(10), connectTimeout: Duration = .seconds(5), failover: Duration = PostgresStoreConfiguration.standardFailover
    ) {
        self.host = host
        self.port = port
        self.username = username
        self.password = password
        self.database = database
        self.sslMode = sslMode
        self.account = account
        self.maximumConnections = maximumConnections
        self.statementTimeout = statementTimeout
        self.connectTimeout = connectTimeout
        self.failover = failover
    }

    /// Reads `postgres://USER@HOST:PORT/DB?sslmode=MODE`. A password in the URL is refused: it
    /// would be in the configuration file, the environment of every process and every error that
    /// quotes the URL. Errors never repeat the URL itself.
    public init(url text: String, password: String?, account: String) throws(PostgresStoreError) {
        guard let url = URLComponents(string: text), let scheme = url.scheme,
              scheme == "postgres" || scheme == "postgresql" else {
            throw PostgresStoreError("is not a postgres:// URL; write postgres://USER@HOST:5432/DATABASE?sslmode=require")
        }
        if url.password != nil {
            throw PostgresStoreError(
                "holds a password; remove it from the URL and put it in store.postgres_password_file or PGPASSWORD")
        }
        guard let user = url.user, !user.isEmpty else {
            throw PostgresStoreError("names no user; write postgres://USER@HOST:5432/DATABASE")
        }
        guard let host = url.host, !host.isEmpty else {
            throw PostgresStoreError("names no host; write postgres://USER@HOST:5432/DATABASE")
        }
        // URLComponents has already refused a port that is not a number; its range is checked here.
        let port = url.port ?? 5432
        guard (1...65_535).contains(port) else {
            throw PostgresStoreError("has port \(port), outside 1–65535")
        }
        var database = url.path
        if database.hasPrefix("/") { database.removeFirst() }
        if database.isEmpty { database = user }
        guard !database.contains("/") else {
            throw PostgresStoreError("has a path that is not one database name; write /DATABASE after the host")
        }
        var sslMode = SSLMode.prefer
        for item in url.queryItems ?? [] {
            switch item.name {
            case "sslmode":
                guard let value = item.value, let mode = SSLMode(rawValue: value) else {
                    throw PostgresStoreError("has an sslmode that is not one of "
                        + SSLMode.allCases.map(\.rawValue).joined(separator: ", "))
                }
                sslMode = mode
            default:
                throw PostgresStoreError("has the parameter '\(item.name)', which orderlive does not use; "
                    + "only sslmode is understood")
            }
        }
        self.init(host: host, port: port, username: user, password: password, database: database,
                  sslMode: sslMode, account: account)
    }

    /// The pool's configuration.
    var client: PostgresClient.Configuration {
        var configuration = PostgresClient.Configuration(
            host: host, port: port, username: username, password: password, database: database, tls: tls)
        configuration.options.maximumConnections = max(1, maximumConnections)
        configuration.options.minimumConnections = 0
        configuration.options.connectTimeout = connectTimeout
        configuration.options.keepAliveBehavior = .init(frequency: .seconds(5))
        configuration.options.connectionIdleTimeout = Self.idleTimeout
        configuration.options.additionalStartupParameters = startupParameters
        return configuration
    }

    /// How long a pooled connection may stay unleased before the pool closes it. The pool arms its
    /// idle and keep-alive timers each time a connection comes back, and cancels them at the next
    /// lease; Swift keeps a cancelled `Task.sleep` (its task and its dispatch timer, about 300 bytes)
    /// until the time it was for. At PostgresNIO's default of 60 s, a leader leasing a connection a
    /// thousand times a second under pushes held 60,000 of them: the heap grew for the first minute
    /// of load and gave it back a minute after (heaptrack, docs/PERFORMANCE.md "Push ingest on
    /// PostgreSQL, fourth pass"). At 10 s that is a sixth, and a connection idle that long is cheap to
    /// make again.
    static let idleTimeout: Duration = .seconds(10)

    /// Settings sent when each connection starts: the statement timeout, the idle-in-transaction
    /// timeout (a frozen agent's open transaction ends and releases its locks), and a name in
    /// `pg_stat_activity`.
    var startupParameters: [(String, String)] {
        let statement = max(1, Checked.milliseconds(of: statementTimeout))
        let idle = max(1, Checked.milliseconds(of: failover))
        return [
            ("statement_timeout", "\(statement)"), ("idle_in_transaction_session_timeout", "\(idle)"),
            ("application_name", "orderlive"),
        ]
    }

    /// A single connection's configuration (the leader's own, which holds its lock).
    func connection() throws(PostgresStoreError) -> PostgresConnection.Configuration {
        var configuration = PostgresConnection.Configuration(
            host: host, port: port, username: username, password: password, database: database,
            tls: try connectionTLS)
        configuration.options.connectTimeout = .milliseconds(max(1, Checked.milliseconds(of: connectTimeout)))
        configuration.options.additionalStartupParameters = startupParameters
        return configuration
    }

    private var tlsConfiguration: TLSConfiguration {
        var tls = TLSConfiguration.makeClientConfiguration()
        switch sslMode {
        case .disable, .prefer, .require: tls.certificateVerification = .none
        case .verifyCA: tls.certificateVerification = .noHostnameVerification
        case .verifyFull: tls.certificateVerification = .fullVerification
        }
        return tls
    }

    private var tls: PostgresClient.Configuration.TLS {
        switch sslMode {
        case .disable: .disable
        case .prefer: .prefer(tlsConfiguration)
        case .require, .verifyCA, .verifyFull: .require(tlsConfiguration)
        }
    }

    private var connectionTLS: PostgresConnection.Configuration.TLS {
        get throws(PostgresStoreError) {
            do {
                switch sslMode {
                case .disable: return .disable
                case .prefer: return .prefer(try NIOSSLContext(configuration: tlsConfiguration))
                case .require, .verifyCA, .verifyFull: return .require(try NIOSSLContext(configuration: tlsConfiguration))
                }
            } catch {
                throw PostgresStoreError("cannot set up TLS: \(error)")
            }
        }
    }
}

/// Why the PostgreSQL store refused or failed, in words for the operator; never holds a password.
public struct PostgresStoreError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What was wrong and what to do.
    public var message: String

    /// Creates an error.
    public init(_ message: String) {
        self.message = message
    }

    public var description: String { message }
}
