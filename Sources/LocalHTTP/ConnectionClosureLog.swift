import CoalescedLogging
public import Logging

/// What a listener says of the connections it closed itself: each is counted in
/// `orderlive_connections_closed_total{listener,reason}`, and each reason that an operator acts on
/// is logged at most once per 10 s (a flood writes a line, not a line per connection). One rule for
/// both listeners; only their names differ.
public struct ConnectionClosureLog: Sendable {
    private let metrics: ListenerMetrics
    private let lines: LogCoalescer
    private let title: String
    private let section: String
    private let limit: Int

    /// The log of listener `title` (`push`, `orders API`) whose keys are under `section` (`ingest`,
    /// `api`), holding at most `limit` connections.
    public init(title: String, section: String, limit: Int, metrics: ListenerMetrics, logger: Logger) {
        self.metrics = metrics
        lines = LogCoalescer(logger: logger, interval: .seconds(10))
        self.title = title
        self.section = section
        self.limit = limit
    }

    /// Counts a connection closed for `reason`, and logs it when an operator acts on it.
    public func record(_ reason: ConnectionClosure) {
        metrics.record(reason)
        let full: Logger.Metadata = ["\(metrics.listener).max_connections": "\(limit)"]
        switch reason {
        case .refused:
            lines.log(.warning, "\(title) listener full: refusing new connections", key: "connections-full", metadata: full)
        case .evicted:
            lines.log(.notice, "\(title) listener full: closing the oldest idle connection for a new one", key: "connections-evicted",
                      metadata: full)
        case .notAllowed:
            lines.log(.notice, "\(title) connection from outside \(section).allow_from closed", key: "connections-not-allowed")
        case .tlsHandshake:
            lines.log(.notice, "\(title) connection closed: the TLS handshake failed", key: "connections-tls")
        case .rapidReset, .frameFlood, .streamLimit, .oversizedHeaders, .protocolError:
            lines.log(.notice, "\(title) HTTP/2 connection cut off: \(String(reason.rawValue.map { $0 == "_" ? " " : $0 }))",
                      key: "connections-http2-\(reason.rawValue)")
        case .headTimeout, .idleTimeout:
            break
        }
    }
}
