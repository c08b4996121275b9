public import CheckedInput

/// What one listener is: where it binds, how it bounds its connections, whether it speaks TLS.
/// Both the push listener and the orders API are built from one of these by ``LocalListener``.
public struct ListenerSettings: Sendable {
    /// The `listener` label of its metrics and the name in its logs (`push`, `api`).
    public var name: String
    /// The configuration key of its address (`ingest.listen`, `api.listen`), named in errors.
    public var key: String
    /// The address to bind.
    public var host: String
    /// The port; 0 picks a free one.
    public var port: Int
    /// A request head must arrive within this time of the connection opening (trickled bytes do not
    /// extend it) or of the previous answer (keep-alive idle), and then its body within it.
    public var readTimeout: Duration
    /// The largest request body read.
    public var maximumBodyBytes: Int
    /// The most connections held at once (``ConnectionAdmission``).
    public var maximumConnections: Int
    /// The peers allowed to connect; empty allows everyone.
    public var allowFrom: [AddressRange]
    /// TLS, when set: every connection must complete a handshake with this material, and offers
    /// `h2` and `http/1.1` by ALPN.
    public var tls: ListenerTLS?
    /// HTTP/2 beside HTTP/1.x: `h2c` without TLS, streams per connection.
    public var http2: ListenerHTTP2

    /// Creates settings.
    public init(name: String, key: String, host: String, port: Int, readTimeout: Duration, maximumBodyBytes: Int,
                maximumConnections: Int, allowFrom: [AddressRange] = [], tls: ListenerTLS? = nil,
                http2: ListenerHTTP2 = ListenerHTTP2()) {
        self.name = name
        self.key = key
        self.host = host
        self.port = port
        self.readTimeout = readTimeout
        self.maximumBodyBytes = maximumBodyBytes
        self.maximumConnections = maximumConnections
        self.allowFrom = allowFrom
        self.tls = tls
        self.http2 = http2
    }
}
