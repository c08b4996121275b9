import ServiceLifecycle

/// Refreshes the gauges that mirror the store and the agent's state every `interval` while metrics are
/// exported over OTLP (DESIGN §14): `/metrics` refreshes them when it is read, but a box behind NAT is
/// never scraped, and its exported journal depth would otherwise stay at its start-up value.
struct MetricsRefresh: Service {
    let operations: AgentOperations
    let interval: Duration

    /// Refreshes at once, then every `interval`, until graceful shutdown or cancellation.
    func run() async {
        await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                await operations.refreshMetrics()
                try? await Task.sleep(for: interval)
            }
        }
    }
}
