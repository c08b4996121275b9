import CoalescedLogging
public import Logging

/// swift-otel's own warnings, on the console's log and coalesced: a collector that is down or a
/// queue that overflows under load repeats the same line per batch, hundreds a second at a push
/// rate of thousands (seen in `make bench`); here each message is written once, then at most once
/// per 10 s with `log.repeated`, as every repeating fault of the agent is (DESIGN §10).
public struct DiagnosticsLogHandler: LogHandler {
    private let coalescer: LogCoalescer
    /// Metadata attached to every line.
    public var metadata: Logger.Metadata = [:]
    /// The lowest level written.
    public var logLevel: Logger.Level = .info

    /// Writes through `logger`, coalesced per message every `interval`.
    public init(logger: Logger, interval: Duration = .seconds(10)) {
        coalescer = LogCoalescer(logger: logger, interval: interval)
        logLevel = logger.logLevel
    }

    /// A metadata value.
    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    /// Writes the line unless one with the same message was written within the interval.
    public func log(event: LogEvent) {
        let merged = metadata.merging(event.metadata ?? [:]) { $1 }
        coalescer.log(event.level, event.message, key: "\(event.level):\(event.message)", metadata: merged)
    }
}
