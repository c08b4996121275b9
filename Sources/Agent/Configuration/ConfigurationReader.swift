import AsyncSignals
import CheckedInput
import Configuration
import Foundation

/// Strict, typed reads of DESIGN §6's keys over the layered providers (environment over file over
/// defaults). Every key asked for is noted, so the set of known keys — for the unknown-key check and
/// its did-you-mean — is exactly what the section readers read, never a second hand-kept list.
public struct ConfigurationReader: Sendable {
    let reader: ConfigReader
    let asked: AskedKeys

    /// A reader over `reader`'s providers.
    init(_ reader: ConfigReader, asked: AskedKeys = AskedKeys()) {
        self.reader = reader
        self.asked = asked
    }

    /// The reader of one section (`upstream`, `auth`, ...).
    public func scoped(to section: String) -> ConfigurationSection {
        ConfigurationSection(name: section, reader: self)
    }
}

/// The keys asked for, in the order they were first asked.
final class AskedKeys: Sendable {
    private let keys = Locked<[String]>([])

    /// Notes `key`.
    func note(_ key: String) {
        keys.withLock { keys in if !keys.contains(key) { keys.append(key) } }
    }

    /// Every key noted.
    var all: [String] { keys.withLock { $0 } }
}

/// One section's keys: each read names its key without the section, and every error names it whole
/// (`'ingest.max_body_bytes' must be ...`).
public struct ConfigurationSection: Sendable {
    /// The section's name.
    public let name: String
    let reader: ConfigurationReader

    /// The longest time any `_ms` key accepts: one day.
    public static let longestMilliseconds = 86_400_000
    /// The longest time any `_s` key accepts: 366 days.
    public static let longestSeconds = 31_622_400

    /// The full name of `key`.
    func fullName(_ key: String) -> String { name + "." + key }

    /// The raw text set for `key`, if any.
    public func raw(_ key: String) -> String? {
        let full = fullName(key)
        reader.asked.note(full)
        return reader.reader.string(forKey: ConfigKey(full))
    }

    /// A string.
    public func string(_ key: String, default value: String) -> String {
        raw(key) ?? value
    }

    /// A path under the base URL: it must start with `/`.
    public func path(_ key: String, default value: String) throws(ConfigurationError) -> String {
        let path = string(key, default: value)
        guard path.hasPrefix("/") else { throw ConfigurationError("'\(fullName(key))' must start with '/', got '\(path)'") }
        return path
    }

    /// A whole number within `minimum...maximum`. Every integer key has an upper bound, so no value
    /// from a file or the environment can overflow where it is used (DESIGN §10).
    public func integer(_ key: String, minimum: Int, maximum: Int, default value: Int) throws(ConfigurationError) -> Int {
        guard let text = raw(key) else { return value }
        let name = fullName(key)
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        guard let number = Checked.int64(decimal: trimmed) else {
            throw ConfigurationError("'\(name)' must be a whole number, got '\(text)'")
        }
        guard number >= Int64(minimum) else { throw ConfigurationError("'\(name)' must be at least \(minimum), got \(number)") }
        guard number <= Int64(maximum), let int = Int(exactly: number) else {
            throw ConfigurationError("'\(name)' must be at most \(maximum), got \(trimmed)")
        }
        return int
    }

    /// A duration in whole milliseconds (`_ms` keys).
    public func milliseconds(
        _ key: String, minimum: Int, maximum: Int = Self.longestMilliseconds, default value: Duration
    ) throws(ConfigurationError) -> Duration {
        .milliseconds(try integer(key, minimum: minimum, maximum: maximum, default: Int(Checked.milliseconds(of: value))))
    }

    /// A duration in whole seconds (`_s` keys).
    public func seconds(
        _ key: String, minimum: Int, maximum: Int = Self.longestSeconds, default value: Duration
    ) throws(ConfigurationError) -> Duration {
        .seconds(try integer(key, minimum: minimum, maximum: maximum, default: Int(value.components.seconds)))
    }

    /// `true` or `false`.
    public func boolean(_ key: String, default value: Bool) throws(ConfigurationError) -> Bool {
        guard let text = raw(key) else { return value }
        switch text.lowercased() {
        case "true": return true
        case "false": return false
        default: throw ConfigurationError("'\(fullName(key))' must be true or false, got '\(text.prefix(64))'")
        }
    }

    /// One of an enumeration's raw values.
    public func choice<Choice: RawRepresentable & CaseIterable>(
        _ key: String, default value: Choice
    ) throws(ConfigurationError) -> Choice where Choice.RawValue == String {
        guard let text = raw(key) else { return value }
        guard let choice = Choice(rawValue: text) else {
            let allowed = Choice.allCases.map(\.rawValue).joined(separator: ", ")
            throw ConfigurationError("'\(fullName(key))' must be one of \(allowed), got '\(text)'")
        }
        return choice
    }

    /// A path to a file that must be readable when set ("" for none).
    public func readableFile(_ key: String, default value: String) throws(ConfigurationError) -> String {
        let path = string(key, default: value)
        if !path.isEmpty, !FileManager.default.isReadableFile(atPath: path) {
            throw ConfigurationError("'\(fullName(key))': cannot read \(path); check the path and its permissions")
        }
        return path
    }
}
