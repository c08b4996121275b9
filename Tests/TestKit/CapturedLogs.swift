import AsyncSignals
public import InMemoryLogging
public import Logging

/// Collects every log entry (level, message, metadata) with swift-log's `InMemoryLogHandler`, so tests
/// assert on a message and its metadata, and search everything logged for a secret.
public final class CapturedLogs: Sendable {
    /// Every logger made here appends to this one handler's store (its copies share it).
    private let handler = InMemoryLogHandler()
    /// Signalled after every entry, for ``wait(for:within:)``.
    private let arrived = WakeSignal()

    /// Creates an empty capture.
    public init() {}

    /// A logger writing here at `level`.
    public func logger(level: Logger.Level) -> Logger {
        let (handler, arrived) = (self.handler, self.arrived)
        var logger = Logger(label: "captured") { _ in Signalling(inner: handler, arrived: arrived) }
        logger.logLevel = level
        return logger
    }

    /// Waits until an entry whose message is exactly `message` was logged, or `limit` passes (one
    /// waiter at a time); true when it was.
    public func wait(for message: String, within limit: Duration = .seconds(20)) async -> Bool {
        let clock = ContinuousClock()
        let deadline = clock.now.advanced(by: TestTime.bound(limit))
        while true {
            if !entries(message).isEmpty { return true }
            guard clock.now < deadline else { return false }
            await arrived.wait(until: deadline, clock: clock)
        }
    }

    /// The in-memory handler, signalling after each entry.
    private struct Signalling: LogHandler {
        var inner: InMemoryLogHandler
        let arrived: WakeSignal

        var metadata: Logger.Metadata {
            get { inner.metadata }
            set { inner.metadata = newValue }
        }

        var logLevel: Logger.Level {
            get { inner.logLevel }
            set { inner.logLevel = newValue }
        }

        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { inner[metadataKey: key] }
            set { inner[metadataKey: key] = newValue }
        }

        func log(event: LogEvent) {
            inner.log(event: event)
            arrived.signal()
        }
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
