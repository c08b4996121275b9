import AsyncSignals
import CoreMetrics

/// What the OpenTelemetry export lost (DESIGN §14: a collector that is down or slow "costs a counted
/// drop"): records dropped from a full queue, and export requests that failed, per signal, counted
/// into `/metrics` as `orderlive_telemetry_dropped_total{signal}` and
/// `orderlive_telemetry_export_failures_total{signal}`. swift-otel says both only as warnings on its
/// diagnostic logger; the Telemetry module's `DiagnosticsLogHandler` reads them there and records
/// them here. Counts recorded before the agent's metrics exist are kept and added once they are
/// bound, so nothing lost at start-up goes uncounted.
public final class TelemetryLosses: Sendable {
    /// The exported signal a loss belongs to; the `signal` label.
    public enum Signal: String, Sendable, CaseIterable {
        /// Trace spans.
        case spans
        /// Log records.
        case logs
        /// Metric exports.
        case metrics
    }

    private struct Counters {
        let dropped: [Signal: Counter]
        let failures: [Signal: Counter]
    }

    private struct State {
        var dropped: [Signal: Int64] = [:]
        var failures: [Signal: Int64] = [:]
        var counters: Counters?
    }

    private let state = Locked(State())

    /// No losses yet, and no metrics bound.
    public init() {}

    /// `count` records of `signal` were dropped from a full queue.
    public func dropped(_ count: Int64, of signal: Signal) {
        guard count > 0 else { return }
        state.withLock { state in
            if let counters = state.counters {
                counters.dropped[signal]?.increment(by: count)
            } else {
                state.dropped[signal, default: 0] &+= count
            }
        }
    }

    /// One export request of `signal` failed (the collector refused it, or did not answer in time).
    public func exportFailed(_ signal: Signal) {
        state.withLock { state in
            if let counters = state.counters {
                counters.failures[signal]?.increment()
            } else {
                state.failures[signal, default: 0] &+= 1
            }
        }
    }

    /// Makes the two families with `factory`, every signal at zero (so a rate can be taken from the
    /// first scrape), and adds what was counted before.
    func bind(factory: any MetricsFactory) {
        func family(_ label: String) -> [Signal: Counter] {
            Dictionary(uniqueKeysWithValues: Signal.allCases.map {
                ($0, Counter(label: label, dimensions: [("signal", $0.rawValue)], factory: factory))
            })
        }
        let counters = Counters(
            dropped: family("orderlive_telemetry_dropped_total"), failures: family("orderlive_telemetry_export_failures_total"))
        state.withLock { state in
            for (signal, count) in state.dropped { counters.dropped[signal]?.increment(by: count) }
            for (signal, count) in state.failures { counters.failures[signal]?.increment(by: count) }
            state = State(counters: counters)
        }
    }
}
