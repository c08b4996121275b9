public import CoreMetrics

/// A listener's own metrics, through an injected factory (nothing bootstrapped globally): the
/// connections it closed itself and why, the HTTP/2 streams it opened, and its TLS certificate's expiry and failed reloads.
public struct ListenerMetrics: Sendable {
    /// The `listener` label (`push`, `api`).
    public let listener: String
    private let closed: [ConnectionClosure: Counter]
    /// Reloads (SIGHUP) whose files did not load; the material in use stayed.
    let tlsReloadFailures: Counter
    /// The certificate in use expires at this Unix time (0 without TLS).
    let certificateExpiry: Gauge
    /// HTTP/2 streams opened (requests and feeds over HTTP/2).
    let http2Streams: Counter

    /// The metrics of listener `listener` (`push`, `api`) in `factory`.
    public init(listener: String, factory: any MetricsFactory) {
        self.listener = listener
        var closed: [ConnectionClosure: Counter] = [:]
        for reason in ConnectionClosure.allCases {
            closed[reason] = Counter(label: "orderlive_connections_closed_total",
                                     dimensions: [("listener", listener), ("reason", reason.rawValue)], factory: factory)
        }
        self.closed = closed
        tlsReloadFailures = Counter(label: "orderlive_tls_reload_failures_total", dimensions: [("listener", listener)], factory: factory)
        certificateExpiry = Gauge(label: "orderlive_tls_certificate_expiry_timestamp_seconds",
                                  dimensions: [("listener", listener)], factory: factory)
        http2Streams = Counter(label: "orderlive_http2_streams_total", dimensions: [("listener", listener)], factory: factory)
    }

    /// Records the expiry of the certificate now in use.
    public func recordCertificateExpiry(_ expiry: Double) {
        certificateExpiry.record(expiry)
    }

    /// Counts a connection the listener closed for `reason`.
    public func record(_ reason: ConnectionClosure) {
        closed[reason]?.increment()
    }

    /// The `# HELP` text of these families.
    public static let help: [String: String] = [
        "orderlive_connections_closed_total":
            "Connections a listener closed itself, by listener and reason (evicted, refused, not_allowed, head_timeout, idle_timeout, "
            + "tls_handshake, rapid_reset, frame_flood, stream_limit, oversized_headers, protocol_error)",
        "orderlive_http2_streams_total": "HTTP/2 streams a listener opened (each request or feed over HTTP/2 is one)",
        "orderlive_tls_reload_failures_total": "TLS reloads (SIGHUP) whose files did not load; the material in use stayed",
        "orderlive_tls_certificate_expiry_timestamp_seconds": "When the listener's TLS certificate in use expires, Unix seconds",
    ]
}
