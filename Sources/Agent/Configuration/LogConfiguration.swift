public import Logging

/// The log format.
public enum LogFormat: String, Sendable, Hashable, CaseIterable {
    /// Text on a terminal, JSON otherwise.
    case auto
    /// Always text.
    case text
    /// Always JSON lines.
    case json
}

/// `log.*`.
public struct LogConfiguration: Sendable, Hashable {
    /// The lowest level logged.
    public var level = Logger.Level.info
    /// The format.
    public var format = LogFormat.auto

    /// The built-in defaults.
    public init() {}

    /// Reads and validates `log.level` and `format`.
    public init(reading section: ConfigurationSection) throws(ConfigurationError) {
        if let text = section.raw("level") {
            guard let level = Logger.Level(rawValue: text) else {
                throw ConfigurationError(
                    "'log.level' must be one of trace, debug, info, notice, warning, error, critical, got '\(text)'")
            }
            self.level = level
        }
        format = try section.choice("format", default: format)
    }
}
