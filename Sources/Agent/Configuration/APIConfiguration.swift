public import CheckedInput
public import LocalHTTP
import OrdersAPI
import Foundation

/// How consumers of the orders API authenticate.
public enum APIAuthMode: String, Sendable, Hashable, CaseIterable {
    /// No authentication (refused unless the listener is loopback).
    case none
    /// A bearer token from `api.tokens_file`.
    case bearer
}

/// `api.*`: the local orders API, its change feed and the dispatch board (DESIGN §11).
public struct APIConfiguration: Sendable, Hashable {
    /// `host:port` to listen on; "" disables the API.
    public var listen = "\(OrdersAPIServer.settings().host):\(OrdersAPIServer.settings().port)"
    /// How consumers authenticate.
    public var auth = APIAuthMode.none
    /// The file of bearer tokens, one per line.
    public var tokensFile = ""
    /// Changes kept for subscribers that resume (the hub's defaults, written once: STYLE).
    public var historyChanges = ChangeHub.Configuration().historyChanges
    /// Subscribers served at once; more get 503.
    public var maximumSubscribers = ChangeHub.Configuration().maximumSubscribers
    /// Changes queued for one subscriber before it is cut off.
    public var subscriberBuffer = ChangeHub.Configuration().subscriberBuffer
    /// A comment line on every idle stream that was sent nothing for this long.
    public var heartbeat = ChangeHub.Configuration().heartbeat
    /// A request head must arrive within this time of the connection opening or of the previous
    /// answer (keep-alive idle).
    public var readTimeout = OrdersAPIServer.settings().readTimeout
    /// Connections held at once, change feeds included; at the limit a new one closes the oldest idle
    /// connection (or one that sent no complete head), and is refused only when all are busy.
    public var maximumConnections = OrdersAPIServer.settings().maximumConnections
    /// Who may connect (`allow_from`: comma-separated CIDR ranges or addresses, IPv4 and IPv6); empty for everyone.
    public var allowFrom: [AddressRange] = []
    /// TLS on the orders API; with a client CA, mTLS also counts as authentication.
    public var tls = ListenerTLSConfiguration()
    /// HTTP/2: `h2c` without TLS (`http2_cleartext`) and streams per connection (`max_streams_per_connection`).
    public var http2 = ListenerHTTP2()
    /// The web origins whose pages may call the API from a browser (`cors_origins`, comma-separated
    /// `scheme://host[:port]`); empty for the API's own origin only.
    public var corsOrigins: [String] = []
    /// How long a board session lives (`session_ttl_s`).
    public var sessionTTL = Duration.seconds(Int(APICredentials.Settings().sessionTTL))
    /// The most sessions kept (`max_sessions`); past it the oldest ends.
    public var maximumSessions = APICredentials.Settings().maximumSessions
    /// Whether `?access_token=` is accepted (`query_tokens`).
    public var queryTokens = APICredentials.Settings().queryTokens
    /// JWTs (`jwt.*`).
    public var jwt = JWTConfiguration()

    /// `listen` as host and port; nil when empty or not `host:port`.
    public var listenAddress: (host: String, port: Int)? { IngestConfiguration.hostAndPort(listen) }

    /// The built-in defaults.
    public init() {}

    /// Reads and validates `api.listen` (`host:port` or ""), `auth`, `tokens_file` (readable),
    /// `history_changes`, `max_subscribers`, `subscriber_buffer`, `heartbeat_s`, `read_timeout_ms`,
    /// `max_connections`, `allow_from`, `cors_origins`, `session_ttl_s`, `max_sessions`, `query_tokens`, `jwt.*`, `http2_cleartext`,
    /// `max_streams_per_connection` and `tls.*`.
    public init(reading section: ConfigurationSection) throws(ConfigurationError) {
        listen = section.string("listen", default: listen)
        if !listen.isEmpty, listenAddress == nil {
            throw ConfigurationError("'api.listen' must be host:port (or \"\" to disable), got '\(listen)'")
        }
        auth = try section.choice("auth", default: auth)
        tokensFile = try section.readableFile("tokens_file", default: tokensFile)
        historyChanges = try section.integer("history_changes", minimum: 1, maximum: 100_000_000, default: historyChanges)
        maximumSubscribers = try section.integer("max_subscribers", minimum: 1, maximum: 1_000_000, default: maximumSubscribers)
        subscriberBuffer = try section.integer("subscriber_buffer", minimum: 1, maximum: 1_000_000, default: subscriberBuffer)
        heartbeat = try section.seconds("heartbeat_s", minimum: 1, maximum: 3_600, default: heartbeat)
        readTimeout = try section.milliseconds("read_timeout_ms", minimum: 1, default: readTimeout)
        maximumConnections = try section.integer("max_connections", minimum: 1, maximum: 1_000_000, default: maximumConnections)
        allowFrom = try IngestConfiguration.allowList(section, default: allowFrom)
        let origins = section.string("cors_origins", default: corsOrigins.joined(separator: ","))
        corsOrigins = origins.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        for origin in corsOrigins {
            if let problem = CORSPolicy.problem(with: origin) { throw ConfigurationError("'api.cors_origins': \(problem)") }
        }
        sessionTTL = try section.seconds("session_ttl_s", minimum: 60, maximum: 31_536_000, default: sessionTTL)
        maximumSessions = try section.integer("max_sessions", minimum: 1, maximum: 10_000_000, default: maximumSessions)
        queryTokens = try section.boolean("query_tokens", default: queryTokens)
        jwt = try JWTConfiguration(reading: section)
        tls = try ListenerTLSConfiguration(reading: section)
        http2 = try ListenerHTTP2(reading: section, default: http2)
    }
}
