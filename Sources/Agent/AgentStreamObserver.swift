import CheckedInput
import OrderSync
import CoreMetrics

/// Carries what the stream service reports into the agent's state (for `/readyz`, `status` and the
/// stream-status file) and its metrics.
struct AgentStreamObserver: StreamObserver {
    let state: AgentState
    let metrics: AgentMetrics
    /// Told when the stream opens: a connection the backend accepted is evidence that it answers,
    /// which ends a pause of the executor (DESIGN §8 "Sync"). Events on a stream that stayed open are
    /// not: the orders endpoint can be down while the events endpoint is up.
    let availability: BackendAvailability

    func streamStateChanged(_ stream: StreamState) {
        state.update { $0.stream = stream }
        metrics.streamOpen.record(stream == .open ? 1 : 0)
        if stream == .open { availability.answered(source: "stream") }
    }

    func streamLost(reason: String, retryIn: Duration?) {
        state.update { state in
            state.stream = retryIn == nil ? .stopped : .backoff
            state.reconnects += 1
            state.lastStreamError = reason
        }
        metrics.streamOpen.record(0)
        metrics.streamReconnects.increment()
    }

    func streamClosed() {
        metrics.streamOpen.record(0)
    }

    func eventsJournaled(count: Int, commitLag: Duration?, at: Double) {
        if let commitLag { metrics.commitLag.recordNanoseconds(Checked.nanoseconds(of: commitLag)) }
        metrics.streamEvents.increment(by: Int64(count))
        state.update { $0.lastEventAt = at }
    }
}
