import CurlHTTP
import Logging
import OrderStore

/// `upstream.*`: where the order backend is and how to reach it.
public struct UpstreamConfiguration: Sendable, Hashable {
    /// The backend's base URL.
    public var baseURL = "http://127.0.0.1:8070"
    /// The event stream path.
    public var eventsPath = "/v1/events"
    /// The login path.
    public var loginPath = "/v1/auth/login"
    /// The refresh path.
    public var refreshPath = "/v1/auth/refresh"
    /// The logout path.
    public var logoutPath = "/v1/auth/logout"
    /// The orders path.
    public var ordersPath = "/v1/orders"
    /// How long connecting may take.
    public var connectTimeout = Duration.milliseconds(10_000)
    /// How long one API request may take.
    public var requestTimeout = Duration.milliseconds(10_000)
    /// Extra CA bundle (PEM) for TLS, or "".
    public var caFile = ""
    /// A `sha256//<base64>` public-key pin, or "".
    public var pinnedPublicKey = ""

    /// TLS options for CurlHTTP.
    public var tls: TLSOptions { TLSOptions(caFile: caFile, pinnedPublicKey: pinnedPublicKey) }
}

/// `auth.*`: who logs in and how the session is kept.
public struct AuthConfiguration: Sendable, Hashable {
    /// The login identifier.
    public var identifier = ""
    /// A file holding the password (systemd `LoadCredential=`, container secrets), or "".
    public var passwordFile = ""
    /// Refresh when the access token expires within this window.
    public var refreshAhead = Duration.seconds(60)
    /// When set, credentials are encrypted at rest with the key in this file.
    public var credentialsKeyFile = ""
}

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
}

/// How the push endpoint authenticates senders.
public enum IngestAuthMode: String, Sendable, Hashable, CaseIterable {
    /// No authentication (refused unless the listener is loopback).
    case none
    /// `Authorization: Bearer <secret>`.
    case bearer
    /// Standard Webhooks signatures.
    case standardWebhooks = "standard-webhooks"
}

/// `ingest.*`: the push endpoint.
public struct IngestConfiguration: Sendable, Hashable {
    /// `host:port` to listen on; "" disables the endpoint.
    public var listen = "127.0.0.1:8080"
    /// How senders authenticate.
    public var auth = IngestAuthMode.none
    /// The file holding the bearer or webhook secret.
    public var secretFile = ""
    /// The largest request body accepted.
    public var maximumBodyBytes = 262_144
    /// The most notifications in one request.
    public var maximumNotifications = 100
    /// How long a webhook id or notif_id is remembered.
    public var dedupeWindow = Duration.seconds(345_600)
    /// Journal depth at which pushes are refused with 429.
    public var highWaterJobs = 100_000
    /// A request head, and then its body, must each arrive within this time (else close / 408).
    public var readTimeout = Duration.milliseconds(10_000)
    /// Connections the push listener holds open at once; more are closed as soon as accepted.
    public var maximumConnections = 1_024

    /// `listen` as host (IPv6 brackets removed) and port; nil when empty or not `host:port`.
    public var listenAddress: (host: String, port: Int)? {
        guard let colon = listen.lastIndex(of: ":"), let port = Int(listen[listen.index(after: colon)...]),
              (0...65_535).contains(port)
        else { return nil }
        var host = String(listen[..<colon])
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        return host.isEmpty ? nil : (host, port)
    }
}

/// `sync.*`: the executor.
public struct SyncConfiguration: Sendable, Hashable {
    /// Attempts before a job becomes a dead letter.
    public var maximumAttempts = 8
    /// Orders per page in a full sync.
    public var pageSize = 500
}

/// `store.*`: state on disk.
public struct StoreConfiguration: Sendable, Hashable {
    /// The state directory, resolved (see ``ConfigurationLoader``).
    public var stateDirectory = ""
    /// Commit durability.
    public var durability = StoreDurability.normal
}

/// The log format.
public enum LogFormat: String, Sendable, Hashable, CaseIterable {
    /// Text on a terminal, JSON otherwise.
    case auto
    /// Always text.
    case text
    /// Always JSON lines.
    case json
}

/// `log.*`.
public struct LogConfiguration: Sendable, Hashable {
    /// The lowest level logged.
    public var level = Logger.Level.info
    /// The format.
    public var format = LogFormat.auto
}

/// The whole configuration of DESIGN §6, typed and validated.
public struct OrderliveConfiguration: Sendable, Hashable {
    /// `upstream.*`
    public var upstream = UpstreamConfiguration()
    /// `auth.*`
    public var auth = AuthConfiguration()
    /// `stream.*`
    public var stream = StreamConfiguration()
    /// `ingest.*`
    public var ingest = IngestConfiguration()
    /// `sync.*`
    public var sync = SyncConfiguration()
    /// `store.*`
    public var store = StoreConfiguration()
    /// `log.*`
    public var log = LogConfiguration()
    /// The file it was read from, if any.
    public var sourceFile: String?

    /// The built-in defaults.
    public init() {}
}
