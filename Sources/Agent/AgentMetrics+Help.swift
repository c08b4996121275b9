import LocalHTTP
import OrdersAPI
import PushIngest

extension AgentMetrics {
    /// The `# HELP` text of the agent's own families (swift-metrics carries none; `/metrics` adds it).
    static let help: [String: String] = [
        "orderlive_auth_authenticated": "1 while the session has usable credentials",
        "orderlive_auth_events_total": "Logins and refreshes by outcome",
        "orderlive_cluster_epoch": "The account's fencing epoch as this agent last saw it (PostgreSQL)",
        "orderlive_cluster_leader": "1 while this agent leads its account (always 1 with SQLite)",
        "orderlive_cluster_takeovers_total": "Times this agent took over the leadership of its account",
        "orderlive_dead_letters": "Dead letters kept",
        "orderlive_dead_letters_pruned_total": "Oldest dead letters removed beyond sync.dead_letter_limit",
        "orderlive_journal_depth": "Jobs waiting in the journal",
        "orderlive_journal_oldest_job_age_seconds": "Age of the oldest journaled job",
        "orderlive_orders": "Orders in the local store",
        "orderlive_store_writable": "1 while the order store's writes succeed",
        "orderlive_store_write_failures_total": "Store writes that failed for a storage reason (full, read-only, I/O, locked)",
        "orderlive_stream_commit_lag_seconds": "From an event's arrival to the commit of its job",
        "orderlive_stream_events_total": "Events journaled",
        "orderlive_stream_open": "1 while the event stream is open",
        "orderlive_telemetry_dropped_total": "OpenTelemetry records dropped from a full export queue, by signal",
        "orderlive_telemetry_export_failures_total": "OpenTelemetry export requests that failed, by signal",
        "orderlive_stream_reconnects_total": "Event stream connections lost",
        "orderlive_sync_backend_available": "1 while the order backend answers the executor; 0 while jobs that need it are paused",
        "orderlive_sync_jobs_total": "Sync job attempts by kind and outcome",
        "orderlive_sync_oldest_waiting_job_age_seconds": "Age of the oldest job that waits for a retry (0: none)",
        "orderlive_sync_paused_seconds_total": "Seconds the executor spent paused because the order backend was unavailable",
        "orderlive_sync_waiting_lanes": "Orders whose jobs wait for a retry after a failure of their own",
        "orderlive_webhook_backlog": "Changes the webhook endpoint has not had yet",
        "orderlive_webhook_deliveries_total": "Outgoing webhook attempts by endpoint and outcome",
        "orderlive_webhook_enabled": "1 while the webhook endpoint is enabled",
        "orderlive_webhook_last_success_timestamp_seconds": "When the webhook endpoint last answered 2xx (0: never)",
        "orderlive_webhook_oldest_undelivered_age_seconds": "Age of the oldest change the webhook endpoint has not had",
    ]

    /// The `# HELP` text of every family made through the swift-metrics factory, the components' too.
    static let factoryHelp = help.merging(PushMetrics.help) { first, _ in first }
        .merging(FeedMetrics.help) { first, _ in first }
        .merging(ListenerMetrics.help) { first, _ in first }
        .merging(OrdersAPIServer.help) { first, _ in first }
        .merging(CredentialsReload.help) { first, _ in first }
        .merging(JWKSFetcher.help) { first, _ in first }

    /// `text` with a `# HELP` line before each family's `# TYPE` line that has none (Prometheus'
    /// text format wants both; `promtool check metrics` fails without HELP).
    static func addingHelp(to text: String) -> String {
        var lines: [Substring] = []
        var previous: Substring = ""
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.hasPrefix("# TYPE ") {
                let name = line.dropFirst(7).prefix { $0 != " " }
                if !previous.hasPrefix("# HELP \(name) "), let help = factoryHelp[String(name)] {
                    lines.append("# HELP \(name) \(help)")
                }
            }
            lines.append(line)
            previous = line
        }
        return lines.joined(separator: "\n")
    }
}
