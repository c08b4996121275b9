import CheckedInput
import Foundation
import JSONToolkit
public import Logging

/// `log.format: json`: one JSON object per line on stderr with `time`, `level`, `label`, `message`
/// and the merged metadata (keys as given, values as strings). Messages and metadata never carry
/// secrets in this code base; this handler does not add any.
public struct JSONLogHandler: LogHandler {
    private let label: String
    private let write: @Sendable (String) -> Void
    /// Metadata attached to every line.
    public var metadata: Logger.Metadata = [:]
    /// The lowest level written.
    public var logLevel: Logger.Level = .info
    /// Metadata read at each line (with telemetry on, the trace and span ids of the work in hand).
    public var metadataProvider: Logger.MetadataProvider?

    /// Creates a handler writing lines with `write` (standard error by default).
    public init(label: String, write: @escaping @Sendable (String) -> Void = { _ = LineWriter.standardError.write(line: $0) }) {
        self.label = label
        self.write = write
    }

    /// A metadata value.
    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    /// Writes one line.
    public func log(event: LogEvent) {
        var fields = [
            #""time":\#(JSONText.string(Self.timestamp()))"#,
            #""level":\#(JSONText.string(event.level.rawValue))"#,
            #""label":\#(JSONText.string(label))"#,
            #""message":\#(JSONText.string(event.message.description))"#,
        ]
        var merged = metadata
        if let provided = metadataProvider?.get(), !provided.isEmpty { merged.merge(provided) { $1 } }
        merged.merge(event.metadata ?? [:]) { $1 }
        for key in merged.keys.sorted() where !["time", "level", "label", "message"].contains(key) {
            fields.append("\(JSONText.string(key)):\(JSONText.string(merged[key].map { "\($0)" } ?? ""))")
        }
        write("{" + fields.joined(separator: ",") + "}")
    }

    /// The time now as RFC 3339 UTC with milliseconds, as log lines carry it.
    public static func timestamp() -> String {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        let milliseconds = Int64(now.tv_sec) * 1000 + Int64(now.tv_nsec / 1_000_000)
        // A wall clock outside years 0000–9999 is not a time to log; say so rather than trap.
        return Checked.rfc3339(unixMilliseconds: milliseconds, fraction: true) ?? "unknown (clock outside 0000–9999)"
    }
}

/// The one place the executable's log output is chosen (STYLE 7: only the executable bootstraps).
public enum LogOutput {
    /// A handler factory for `log.format` and `log.level`: `auto` is text on a terminal, else JSON.
    public static func factory(
        _ configuration: LogConfiguration, standardErrorIsTerminal: Bool
    ) -> @Sendable (String) -> any LogHandler {
        let json = configuration.format == .json || (configuration.format == .auto && !standardErrorIsTerminal)
        let level = configuration.level
        return { label in
            if json {
                var handler = JSONLogHandler(label: label)
                handler.logLevel = level
                return handler
            }
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
    }
}
