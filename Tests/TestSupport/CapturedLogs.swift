import AsyncSignals
import Logging

/// Collects every log line (message and metadata) so tests can search them for secrets.
public final class CapturedLogs: Sendable {
    /// Creates an empty capture.
    public init() {}

    private let lines = Locked<[String]>([])

    /// A logger writing here at `level`.
    public func logger(level: Logger.Level) -> Logger {
        var logger = Logger(label: "captured") { _ in Handler(sink: self) }
        logger.logLevel = level
        return logger
    }

    /// Everything logged so far, one line per entry.
    public var text: String { lines.withLock { $0.joined(separator: "\n") } }

    fileprivate func append(_ line: String) {
        lines.withLock { $0.append(line) }
    }

    private struct Handler: LogHandler {
        let sink: CapturedLogs
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .trace

        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }

        func log(event: LogEvent) {
            let all = metadata.merging(event.metadata ?? [:]) { $1 }
            sink.append("\(event.level) \(event.message) \(all.sorted { $0.key < $1.key }.map { "\($0)=\($1)" })")
        }
    }
}

/// A logger that drops everything, for tests that do not look at logs.
public let quietLogger = Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })
