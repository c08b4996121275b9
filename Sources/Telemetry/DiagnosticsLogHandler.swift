public import Agent
import CoalescedLogging
public import Logging

/// swift-otel's own warnings, on the console's log and coalesced: a collector that is down or a
/// queue that overflows under load repeats the same line per batch, hundreds a second at a push
/// rate of thousands (seen in `make bench`); here each message is written once, then at most once
/// per 10 s with `log.repeated`, as every repeating fault of the agent is (DESIGN §10).
///
/// Every such warning is also counted, before coalescing, into ``Agent/TelemetryLosses``: records a
/// batch processor dropped from its full queue (its `dropped_count`) and exports that failed, by the
/// signal of the component that said it.
public struct DiagnosticsLogHandler: LogHandler {
    private let coalescer: LogCoalescer
    private let losses: TelemetryLosses?
    private var written: Logger.Level
    /// Metadata attached to every line.
    public var metadata: Logger.Metadata = [:]
    /// The lowest level written. Warnings always reach the handler whatever it is set to (swift-otel
    /// sets it from `OTEL_LOG_LEVEL`), since they carry the losses to count; below it nothing is written.
    public var logLevel: Logger.Level {
        get { min(written, .warning) }
        set { written = newValue }
    }

    /// Writes through `logger`, coalesced per message every `interval`; counts losses into `losses`.
    public init(logger: Logger, losses: TelemetryLosses? = nil, interval: Duration = .seconds(10)) {
        coalescer = LogCoalescer(logger: logger, interval: interval)
        self.losses = losses
        written = logger.logLevel
    }

    /// A metadata value.
    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    /// Counts a loss the line reports, then writes it unless one with the same message was written
    /// within the interval.
    public func log(event: LogEvent) {
        let merged = metadata.merging(event.metadata ?? [:]) { $1 }
        if let losses { Self.count(event.message.description, merged, into: losses) }
        guard event.level >= written else { return }
        coalescer.log(event.level, event.message, key: "\(event.level):\(event.message)", metadata: merged)
    }

    /// The signal of swift-otel's component (its `component` metadata), if it exports one.
    static func signal(_ metadata: Logger.Metadata) -> TelemetryLosses.Signal? {
        switch metadata["component"]?.description {
        case "OTelBatchSpanProcessor", "OTLPHTTPSpanExporter": .spans
        case "OTelBatchLogRecordProcessor", "OTLPHTTPLogRecordExporter": .logs
        case "OTelPeriodicExportingMetricsReader", "OTLPHTTPMetricExporter": .metrics
        default: nil
        }
    }

    /// Records what `message` with `metadata` says was lost: a `dropped_count` (a number from
    /// outside, read with a checked conversion; anything else counts nothing), or a failed export.
    static func count(_ message: String, _ metadata: Logger.Metadata, into losses: TelemetryLosses) {
        guard let signal = signal(metadata) else { return }
        if let text = metadata["dropped_count"]?.description, let dropped = Int64(text) {
            losses.dropped(dropped, of: signal)
        } else if message.hasPrefix("Failed to export") {
            losses.exportFailed(signal)
        }
    }
}
