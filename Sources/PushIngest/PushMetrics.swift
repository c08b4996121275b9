public import CoreMetrics

/// The push endpoint's metrics (DESIGN §4 `/metrics`), made through an injected factory so tests
/// and the agent each own their registry; nothing is bootstrapped globally.
public struct PushMetrics: Sendable {
    /// How one `POST /api/push` ended; the `outcome` label of `orderlive_push_requests_total`.
    public enum Outcome: String, Sendable, CaseIterable {
        /// 200, journaled.
        case accepted
        /// 200, already accepted within the dedupe window.
        case duplicate
        /// 409: the `webhook-id` was accepted for a different body within the dedupe window.
        case reusedID = "reused_id"
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
    /// Notifications applied although their `notif_id` was seen with other content.
    let reusedNotificationIDs: Counter
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
        reusedNotificationIDs = Counter(label: "orderlive_push_reused_notif_ids_total", factory: factory)
        authenticationFailures = Counter(label: "orderlive_push_auth_failures_total", factory: factory)
        latency = CoreMetrics.Timer(label: "orderlive_push_request_duration_seconds", factory: factory)
        connectionsRefused = Counter(label: "orderlive_push_connections_refused_total", factory: factory)
    }

    /// The `# HELP` text of each family made here (swift-metrics has no place for it; the agent's
    /// `/metrics` adds these lines, and `promtool check metrics` insists on them).
    public static let help: [String: String] = [
        "orderlive_push_requests_total": "Push requests answered, by outcome",
        "orderlive_push_notifications_total": "Notifications in accepted push requests",
        "orderlive_push_jobs_total": "Sync jobs journaled from pushes",
        "orderlive_push_duplicates_total": "Push requests and notifications answered from their idempotency keys",
        "orderlive_push_reused_notif_ids_total": "Notifications applied although their notif_id was accepted before with other content",
        "orderlive_push_auth_failures_total": "Push requests refused by authentication",
        "orderlive_push_request_duration_seconds": "Time from a push request's head to its answer",
        "orderlive_push_connections_refused_total": "Push connections closed at once because ingest.max_connections were open",
    ]

    /// Counts one finished request.
    func record(_ outcome: Outcome) {
        requests[outcome]?.increment()
    }
}
