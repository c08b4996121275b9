public import CheckedInput
public import LocalHTTP
import PushIngest

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
    public var listen = "\(PushServer.settings().host):\(PushServer.settings().port)"
    /// How senders authenticate.
    public var auth = IngestAuthMode.none
    /// The file holding the bearer or webhook secret.
    public var secretFile = ""
    /// The largest request body accepted (the component's default, written once: STYLE).
    public var maximumBodyBytes = PushServer.settings().maximumBodyBytes
    /// The most notifications in one request.
    public var maximumNotifications = PushEndpoint.Configuration().maximumNotifications
    /// How long a webhook id or notif_id is remembered.
    public var dedupeWindow = Duration.seconds(345_600)
    /// Journal depth at which pushes are refused with 429.
    public var highWaterJobs = 100_000
    /// A request head, and then its body, must each arrive within this time (else close / 408).
    public var readTimeout = PushServer.settings().readTimeout
    /// Connections the push listener holds open at once; at the limit a new one closes the oldest
    /// idle connection (or one that sent no complete head), and is refused only when all are busy.
    public var maximumConnections = PushServer.settings().maximumConnections
    /// Who may connect (`allow_from`: comma-separated CIDR ranges or addresses, IPv4 and IPv6); empty for everyone.
    public var allowFrom: [AddressRange] = []
    /// TLS on the push listener.
    public var tls = ListenerTLSConfiguration()
    /// HTTP/2: `h2c` without TLS (`http2_cleartext`) and streams per connection (`max_streams_per_connection`).
    public var http2 = ListenerHTTP2()

    /// `listen` as host (IPv6 brackets removed) and port; nil when empty or not `host:port`.
    public var listenAddress: (host: String, port: Int)? { Self.hostAndPort(listen) }

    /// `text` as host (IPv6 brackets removed) and port; nil when empty or not `host:port`.
    static func hostAndPort(_ text: String) -> (host: String, port: Int)? {
        guard let colon = text.lastIndex(of: ":"), let port = Int(text[text.index(after: colon)...]),
              (0...65_535).contains(port)
        else { return nil }
        var host = String(text[..<colon])
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        return host.isEmpty ? nil : (host, port)
    }

    /// The built-in defaults.
    public init() {}

    /// Reads and validates `ingest.listen` (`host:port` or ""), `auth`,
    /// `secret_file` (readable), `max_body_bytes`, `max_notifications`, `dedupe_window_s`,
    /// `high_water_jobs`, `read_timeout_ms`, `max_connections`, `allow_from`, `http2_cleartext`, `max_streams_per_connection` and `tls.*`.
    public init(reading section: ConfigurationSection) throws(ConfigurationError) {
        listen = section.string("listen", default: listen)
        if !listen.isEmpty, listenAddress == nil {
            throw ConfigurationError("'ingest.listen' must be host:port (or \"\" to disable), got '\(listen)'")
        }
        auth = try section.choice("auth", default: auth)
        secretFile = try section.readableFile("secret_file", default: secretFile)
        maximumBodyBytes = try section.integer("max_body_bytes", minimum: 1, maximum: 1 << 30, default: maximumBodyBytes)
        maximumNotifications = try section.integer(
            "max_notifications", minimum: 1, maximum: 1_000_000, default: maximumNotifications)
        dedupeWindow = try section.seconds("dedupe_window_s", minimum: 0, default: dedupeWindow)
        highWaterJobs = try section.integer("high_water_jobs", minimum: 1, maximum: 100_000_000, default: highWaterJobs)
        readTimeout = try section.milliseconds("read_timeout_ms", minimum: 1, default: readTimeout)
        maximumConnections = try section.integer(
            "max_connections", minimum: 1, maximum: 1_000_000, default: maximumConnections)
        allowFrom = try Self.allowList(section, default: allowFrom)
        tls = try ListenerTLSConfiguration(reading: section)
        http2 = try ListenerHTTP2(reading: section, default: http2)
    }

    /// `allow_from` of `section` as ranges: every entry an address or a CIDR range.
    static func allowList(_ section: ConfigurationSection, default value: [AddressRange]) throws(ConfigurationError) -> [AddressRange] {
        guard let text = section.raw("allow_from") else { return value }
        switch AddressRange.list(text) {
        case .success(let ranges):
            return ranges
        case .failure(let error):
            throw ConfigurationError("'\(section.name).allow_from': '\(error.entry)' is not an IPv4 or IPv6 address or a CIDR range "
                + "(for example 10.0.0.0/8, 192.0.2.7, fd00::/8)")
        }
    }
}
