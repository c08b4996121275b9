import CoreMetrics

/// The push endpoint's metrics (DESIGN §4 `/metrics`), made through an injected factory so tests
/// and the agent each own their registry; nothing is bootstrapped globally.
public struct PushMetrics: Sendable {
    /// How one `POST /api/push` ended; the `outcome` label of `orderlive_push_requests_total`.
    public enum Outcome: String, Sendable, CaseIterable {
        /// 200, journaled.
        case accepted
        /// 200, already accepted within the dedupe window.
        case duplicate
        /// 400, Gorush's messages.
        case badRequest = "bad_request"
        /// 401.
        case unauthorized
        /// 408: the body did not arrive in time.
        case timeout
        /// 413.
        case tooLarge = "too_large"
        /// 429: the journal is over its high-water mark.
        case overloaded
        /// 503: the journal could not be written.
        case unavailable
        /// 503: the agent is shutting down.
        case shuttingDown = "shutting_down"
    }

    private let requests: [Outcome: Counter]
    /// Notifications in accepted requests.
    let notifications: Counter
    /// Jobs journaled from pushes.
    let jobs: Counter
    /// Requests and notifications answered from the dedupe keys.
    let duplicates: Counter
    /// Requests refused by authentication.
    let authenticationFailures: Counter
    /// Time from the request head to the answer.
    let latency: CoreMetrics.Timer
    /// Connections closed at once because the listener held `ingest.max_connections`.
    let connectionsRefused: Counter

    /// Creates the metrics in `factory`.
    public init(factory: any MetricsFactory) {
        var requests: [Outcome: Counter] = [:]
        for outcome in Outcome.allCases {
            requests[outcome] = Counter(
                label: "orderlive_push_requests_total", dimensions: [("outcome", outcome.rawValue)], factory: factory)
        }
        self.requests = requests
        notifications = Counter(label: "orderlive_push_notifications_total", factory: factory)
        jobs = Counter(label: "orderlive_push_jobs_total", factory: factory)
        duplicates = Counter(label: "orderlive_push_duplicates_total", factory: factory)
        authenticationFailures = Counter(label: "orderlive_push_auth_failures_total", factory: factory)
        latency = CoreMetrics.Timer(label: "orderlive_push_request_duration_seconds", factory: factory)
        connectionsRefused = Counter(label: "orderlive_push_connections_refused_total", factory: factory)
    }

    /// Counts one finished request.
    func record(_ outcome: Outcome) {
        requests[outcome]?.increment()
    }
}
