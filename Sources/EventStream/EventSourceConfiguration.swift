public import CurlHTTP
import ServerSentEvents

/// Everything an ``EventSource`` needs to know about the stream it keeps open.
public struct EventSourceConfiguration: Sendable {
    /// The stream URL.
    public var url: String
    /// The method; `GET` unless a stream needs another.
    public var method: String
    /// A request body, for streams opened by `POST`.
    public var body: [UInt8]?
    /// Extra headers sent on every attempt (the header provider's come after, and win).
    public var headers: HTTPHeaders
    /// The cursor to resume from on the first attempt; empty for none.
    public var lastEventID: String
    /// The first reconnect delay (0 allowed); a server's `retry:` replaces it.
    public var initialDelay: Duration
    /// The largest reconnect delay.
    public var maximumDelay: Duration
    /// A connection up this long resets the backoff.
    public var resetAfter: Duration
    /// No byte for this long drops the connection; nil for none.
    public var idleTimeout: Duration?
    /// How long connecting may take.
    public var connectTimeout: Duration
    /// TLS trust and pinning.
    public var tls: TLSOptions
    /// Reconnect after a lost connection; false ends ``EventSource/run(_:)`` at the first loss.
    public var reconnects: Bool
    /// Report comment lines.
    public var reportsComments: Bool
    /// The largest event kept; a larger one is discarded and reported.
    public var maximumEventBytes: Int
    /// How many body bytes may wait for a slow consumer before the transfer pauses.
    public var bufferLimit: Int
    /// The `User-Agent` header.
    public var userAgent: String

    /// Creates a configuration with DESIGN §6's stream defaults.
    public init(
        url: String,
        method: String = "GET",
        body: [UInt8]? = nil,
        headers: HTTPHeaders = [:],
        lastEventID: String = "",
        initialDelay: Duration = .seconds(1),
        maximumDelay: Duration = .seconds(30),
        resetAfter: Duration = .seconds(60),
        idleTimeout: Duration? = .seconds(45),
        connectTimeout: Duration = .seconds(10),
        tls: TLSOptions = .init(),
        reconnects: Bool = true,
        reportsComments: Bool = false,
        maximumEventBytes: Int = 64 << 20,
        bufferLimit: Int = 1 << 20,
        userAgent: String = "orderlive/eventstream"
    ) {
        self.url = url
        self.method = method
        self.body = body
        self.headers = headers
        self.lastEventID = lastEventID
        self.initialDelay = initialDelay
        self.maximumDelay = maximumDelay
        self.resetAfter = resetAfter
        self.idleTimeout = idleTimeout
        self.connectTimeout = connectTimeout
        self.tls = tls
        self.reconnects = reconnects
        self.reportsComments = reportsComments
        self.maximumEventBytes = maximumEventBytes
        self.bufferLimit = bufferLimit
        self.userAgent = userAgent
    }
}

/// Supplies per-attempt headers, such as a fresh bearer token (FIELD-NOTES 17).
public protocol EventStreamHeaderProvider: Sendable {
    /// Headers for the next attempt. Called before every attempt; a thrown error counts as a
    /// failed attempt and is retried with backoff.
    func headers() async throws -> HTTPHeaders
    /// The server answered 401 to an attempt made with `headers`.
    func unauthorized(_ headers: HTTPHeaders) async
}

/// A header provider with fixed headers and nothing to refresh.
public struct FixedHeaders: EventStreamHeaderProvider {
    /// The headers sent on every attempt.
    public var fields: HTTPHeaders

    /// Creates a provider.
    public init(_ fields: HTTPHeaders = [:]) {
        self.fields = fields
    }

    /// The fixed headers.
    public func headers() async throws -> HTTPHeaders { fields }

    /// Nothing can be refreshed.
    public func unauthorized(_ headers: HTTPHeaders) async {}
}
