import AsyncSignals
public import Logging

/// Writes the first of a run of identical log lines, then at most one line per `interval` while
/// they repeat, carrying `log.repeated`: how many occurred since the last line written (this one
/// included). Lines are identical when their `key` is; the key names the condition (message and
/// the metadata that tell conditions apart), never data that varies per request.
public final class LogCoalescer: Sendable {
    private struct Run {
        var lastWritten: Duration
        var unwritten: Int
    }

    private let logger: Logger
    private let interval: Duration
    private let uptime: @Sendable () -> Duration
    private let runs = Locked<[String: Run]>([:])

    /// At most this many kinds are remembered; past it the memory is cleared (a few lines more,
    /// never unbounded memory).
    public static let maximumKinds = 256

    /// A coalescer writing to `logger`. `uptime` is a monotonic clock (injected by tests).
    public init(
        logger: Logger, interval: Duration = .seconds(10),
        uptime: @escaping @Sendable () -> Duration = LogCoalescer.processUptime
    ) {
        self.logger = logger
        self.interval = interval
        self.uptime = uptime
    }

    /// Time since the first use of this clock in the process.
    public static let processUptime: @Sendable () -> Duration = {
        let start = ContinuousClock.now
        return { ContinuousClock.now - start }
    }()

    /// Logs `message` at `level` unless a line of the same `key` was written within the interval;
    /// returns whether a line was written.
    @discardableResult
    public func log(
        _ level: Logger.Level, _ message: @autoclosure () -> Logger.Message, key: String,
        metadata: Logger.Metadata = [:]
    ) -> Bool {
        guard logger.logLevel <= level else { return false }
        let now = uptime()
        let repeated: Int? = runs.withLock { runs in
            if var run = runs[key] {
                run.unwritten += 1
                guard now - run.lastWritten >= interval else {
                    runs[key] = run
                    return nil
                }
                runs[key] = Run(lastWritten: now, unwritten: 0)
                return run.unwritten
            }
            if runs.count >= Self.maximumKinds { runs.removeAll(keepingCapacity: true) }
            runs[key] = Run(lastWritten: now, unwritten: 0)
            return 1
        }
        guard let repeated else { return false }
        var metadata = metadata
        if repeated > 1 { metadata["log.repeated"] = "\(repeated)" }
        logger.log(level: level, message(), metadata: metadata)
        return true
    }
}
