import InMemoryLogging
import Logging

/// Collects every log entry (level, message, metadata) with swift-log's `InMemoryLogHandler`, so tests
/// assert on a message and its metadata, and search everything logged for a secret.
public final class CapturedLogs: Sendable {
    /// Every logger made here appends to this one handler's store (its copies share it).
    private let handler = InMemoryLogHandler()

    /// Creates an empty capture.
    public init() {}

    /// A logger writing here at `level`.
    public func logger(level: Logger.Level) -> Logger {
        let handler = self.handler
        var logger = Logger(label: "captured") { _ in handler }
        logger.logLevel = level
        return logger
    }

    /// Everything logged so far, in order.
    public var entries: [InMemoryLogHandler.Entry] { handler.entries }

    /// The entries whose message is exactly `message`.
    public func entries(_ message: String) -> [InMemoryLogHandler.Entry] {
        entries.filter { $0.message.description == message }
    }

    /// Everything logged so far, one line per entry (`level message [key=value, ...]`), for
    /// searching for a secret anywhere in a message or a metadata value.
    public var text: String {
        entries.map { entry in
            "\(entry.level) \(entry.message) \(entry.metadata.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" })"
        }.joined(separator: "\n")
    }
}

/// A logger that drops everything, for tests that do not look at logs.
public let quietLogger = Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })
