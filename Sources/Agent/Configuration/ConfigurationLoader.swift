import CheckedInput
import Configuration
import Foundation
import Logging
import SystemPackage
import Yams

/// A configuration problem: which key, what is wrong, what to do. Reported before anything starts.
public struct ConfigurationError: Error, Sendable, CustomStringConvertible {
    /// The one-line message.
    public var message: String

    /// Creates an error.
    public init(_ message: String) {
        self.message = message
    }

    /// The message.
    public var description: String { message }
}

/// Reads DESIGN §6's configuration: a YAML file (`--config FILE`, else `./orderlive.yaml` if
/// present, else built-in defaults) under `ORDERLIVE_<SECTION>_<KEY>` environment overrides, through
/// apple/swift-configuration. Every value is parsed strictly: an unknown or misspelled key, a wrong
/// type, an out-of-range number, a malformed URL or an unreadable secret file is an error naming
/// the key — never a silent fallback to the default.
public enum ConfigurationLoader {
    /// Every key the file and the environment may set.
    public static let keys: [String] = [
        "upstream.base_url", "upstream.events_path", "upstream.login_path", "upstream.refresh_path",
        "upstream.logout_path", "upstream.orders_path", "upstream.connect_timeout_ms", "upstream.request_timeout_ms",
        "upstream.ca_file", "upstream.pinned_public_key",
        "auth.identifier", "auth.password_file", "auth.refresh_ahead_s", "auth.credentials_key_file",
        "stream.initial_delay_ms", "stream.max_delay_ms", "stream.reset_after_s", "stream.idle_timeout_ms",
        "ingest.listen", "ingest.auth", "ingest.secret_file", "ingest.max_body_bytes", "ingest.max_notifications",
        "ingest.dedupe_window_s", "ingest.high_water_jobs", "ingest.read_timeout_ms", "ingest.max_connections",
        "sync.max_attempts", "sync.page_size",
        "store.state_dir", "store.durability",
        "log.level", "log.format",
    ]

    /// The environment variable holding the password, when no password file is configured.
    public static let passwordVariable = "ORDERLIVE_AUTH_PASSWORD"

    /// The environment variable that overrides `key`.
    public static func environmentName(for key: String) -> String {
        "ORDERLIVE_" + key.uppercased().replacingOccurrences(of: ".", with: "_")
    }

    /// Loads and validates the configuration.
    public static func load(
        file explicitFile: String?,
        environment: [String: String] = ProcessInfo.processInfo.environment,
        currentDirectory: String = FileManager.default.currentDirectoryPath
    ) async throws(ConfigurationError) -> OrderliveConfiguration {
        let file: String?
        if let explicitFile {
            guard FileManager.default.isReadableFile(atPath: explicitFile) else {
                throw ConfigurationError("cannot read the configuration file \(explicitFile): check the path given to --config")
            }
            file = explicitFile
        } else {
            let candidate = currentDirectory + "/orderlive.yaml"
            file = FileManager.default.fileExists(atPath: candidate) ? candidate : nil
        }
        if let file { try checkFileKeys(file) }
        try checkEnvironmentKeys(environment)

        var providers: [any ConfigProvider] = [
            EnvironmentVariablesProvider(
                environmentVariables: environment, secretsSpecifier: .specific([passwordVariable])
            ).prefixKeys(with: "orderlive"),
        ]
        if let file {
            do {
                providers.append(try await FileProvider<YAMLSnapshot>(filePath: FilePath(file)))
            } catch {
                throw ConfigurationError("\(file) is not valid YAML: \(error)")
            }
        }
        let values = Values(reader: ConfigReader(providers: providers))
        var configuration = OrderliveConfiguration()
        configuration.sourceFile = file
        try read(into: &configuration, from: values)
        configuration.store.stateDirectory = try resolveStateDirectory(configuration.store.stateDirectory, environment)
        return configuration
    }

    // MARK: Keys

    static func checkFileKeys(_ file: String) throws(ConfigurationError) {
        let text: String
        do {
            text = try String(contentsOfFile: file, encoding: .utf8)
        } catch {
            throw ConfigurationError("cannot read the configuration file \(file): \(error.localizedDescription)")
        }
        // Walked as YAML nodes, not `Yams.load`: building dictionaries trapped on a key written twice
        // (found by the configuration fuzzer); composing refuses duplicates with a message naming them.
        let root: Node?
        do {
            root = try Yams.compose(yaml: text)
        } catch {
            throw ConfigurationError("\(file) is not valid YAML: \(error)")
        }
        guard let root else { return }  // an empty file: all defaults
        if isNull(root) { return }
        guard let sections = root.mapping else {
            throw ConfigurationError("\(file) must be a mapping of sections (upstream:, auth:, stream:, ...)")
        }
        for (sectionNode, content) in sections {
            let section = sectionNode.string ?? "\(sectionNode)"
            guard Self.sectionNames.contains(section) else {
                throw ConfigurationError("unknown section '\(section)' in \(file)\(suggestion(for: section, among: Self.sectionNames))")
            }
            // `section:` with nothing under it.
            if isNull(content) { continue }
            guard let fields = content.mapping else {
                throw ConfigurationError("section '\(section)' in \(file) must be a mapping of keys")
            }
            for (nameNode, value) in fields {
                let key = "\(section).\(nameNode.string ?? "\(nameNode)")"
                guard keys.contains(key) else {
                    throw ConfigurationError("unknown key '\(key)' in \(file)\(suggestion(for: key, among: keys))")
                }
                if value.mapping != nil || value.sequence != nil {
                    throw ConfigurationError("'\(key)' in \(file) must be a single value, not a list or mapping")
                }
            }
        }
    }

    /// A plain scalar YAML reads as null: nothing, `~` or `null`.
    private static func isNull(_ node: Node) -> Bool {
        guard let scalar = node.scalar, scalar.style == .plain else { return false }
        return ["", "~", "null", "Null", "NULL"].contains(scalar.string)
    }

    static func checkEnvironmentKeys(_ environment: [String: String]) throws(ConfigurationError) {
        let known = Set(keys.map(environmentName)).union([passwordVariable])
        for name in environment.keys where name.hasPrefix("ORDERLIVE_") && !known.contains(name) {
            throw ConfigurationError(
                "unknown environment variable \(name)\(suggestion(for: name, among: Array(known)))")
        }
    }

    private static var sectionNames: [String] { Array(Set(keys.map { String($0.split(separator: ".")[0]) })) }

    /// ": did you mean 'x'?" for the closest known name, when one is close.
    static func suggestion(for name: String, among candidates: [String]) -> String {
        let scored = candidates.map { ($0, editDistance(name.lowercased(), $0.lowercased())) }
        guard let best = scored.min(by: { $0.1 < $1.1 }), best.1 <= max(2, name.count / 4) else { return "" }
        return "; did you mean '\(best.0)'?"
    }

    static func editDistance(_ a: String, _ b: String) -> Int {
        let a = Array(a)
        let b = Array(b)
        var previous = Array(0...b.count)
        for i in 1...max(a.count, 1) where !a.isEmpty {
            var current = [i] + Array(repeating: 0, count: b.count)
            for j in 1...max(b.count, 1) where !b.isEmpty {
                current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1))
            }
            previous = current
        }
        return previous[b.count]
    }

    // MARK: Values

    /// Typed, strict reads over the layered providers.
    struct Values {
        let reader: ConfigReader

        func raw(_ key: String) -> String? {
            reader.string(forKey: ConfigKey(key))
        }

        func string(_ key: String, _ current: inout String) {
            if let value = raw(key) { current = value }
        }

        /// A whole number within `minimum...maximum`. Every integer key has an upper bound, so no
        /// value from a file or the environment can overflow where it is used (DESIGN §10).
        func integer(_ key: String, minimum: Int, maximum: Int, _ current: inout Int) throws(ConfigurationError) {
            guard let text = raw(key) else { return }
            let trimmed = text.trimmingCharacters(in: .whitespaces)
            guard let value = Checked.int64(decimal: trimmed) else {
                throw ConfigurationError("'\(key)' must be a whole number, got '\(text)'")
            }
            guard value >= Int64(minimum) else { throw ConfigurationError("'\(key)' must be at least \(minimum), got \(value)") }
            guard value <= Int64(maximum), let int = Int(exactly: value) else {
                throw ConfigurationError("'\(key)' must be at most \(maximum), got \(trimmed)")
            }
            current = int
        }

        func milliseconds(_ key: String, minimum: Int, maximum: Int = Values.longestMilliseconds,
                          _ current: inout Duration) throws(ConfigurationError) {
            var value = Int(Checked.milliseconds(of: current))
            try integer(key, minimum: minimum, maximum: maximum, &value)
            current = .milliseconds(value)
        }

        func seconds(_ key: String, minimum: Int, maximum: Int = Values.longestSeconds,
                     _ current: inout Duration) throws(ConfigurationError) {
            var value = Int(current.components.seconds)
            try integer(key, minimum: minimum, maximum: maximum, &value)
            current = .seconds(value)
        }

        /// The longest time any `_ms` key accepts: one day.
        static let longestMilliseconds = 86_400_000
        /// The longest time any `_s` key accepts: 366 days.
        static let longestSeconds = 31_622_400

        func choice<Choice: RawRepresentable & CaseIterable>(
            _ key: String, _ current: inout Choice
        ) throws(ConfigurationError) where Choice.RawValue == String {
            guard let text = raw(key) else { return }
            guard let value = Choice(rawValue: text) else {
                let allowed = Choice.allCases.map(\.rawValue).joined(separator: ", ")
                throw ConfigurationError("'\(key)' must be one of \(allowed), got '\(text)'")
            }
            current = value
        }

        func readableFile(_ key: String, _ current: inout String) throws(ConfigurationError) {
            string(key, &current)
            if !current.isEmpty, !FileManager.default.isReadableFile(atPath: current) {
                throw ConfigurationError("'\(key)': cannot read \(current); check the path and its permissions")
            }
        }
    }

    static func read(into configuration: inout OrderliveConfiguration, from values: Values) throws(ConfigurationError) {
        var upstream = configuration.upstream
        values.string("upstream.base_url", &upstream.baseURL)
        do {
            try InspectOptions.validateURL(upstream.baseURL)
        } catch {
            throw ConfigurationError("'upstream.base_url': \(error.message)")
        }
        while upstream.baseURL.hasSuffix("/") { upstream.baseURL.removeLast() }
        for (key, path) in [("upstream.events_path", \UpstreamConfiguration.eventsPath),
                            ("upstream.login_path", \.loginPath), ("upstream.refresh_path", \.refreshPath),
                            ("upstream.logout_path", \.logoutPath), ("upstream.orders_path", \.ordersPath)] {
            values.string(key, &upstream[keyPath: path])
            guard upstream[keyPath: path].hasPrefix("/") else {
                throw ConfigurationError("'\(key)' must start with '/', got '\(upstream[keyPath: path])'")
            }
        }
        try values.milliseconds("upstream.connect_timeout_ms", minimum: 1, &upstream.connectTimeout)
        try values.milliseconds("upstream.request_timeout_ms", minimum: 1, &upstream.requestTimeout)
        try values.readableFile("upstream.ca_file", &upstream.caFile)
        values.string("upstream.pinned_public_key", &upstream.pinnedPublicKey)
        if !upstream.pinnedPublicKey.isEmpty, !upstream.pinnedPublicKey.hasPrefix("sha256//") {
            throw ConfigurationError("'upstream.pinned_public_key' must look like sha256//<base64>")
        }
        configuration.upstream = upstream

        var auth = configuration.auth
        values.string("auth.identifier", &auth.identifier)
        try values.readableFile("auth.password_file", &auth.passwordFile)
        try values.seconds("auth.refresh_ahead_s", minimum: 0, &auth.refreshAhead)
        try values.readableFile("auth.credentials_key_file", &auth.credentialsKeyFile)
        configuration.auth = auth

        var stream = configuration.stream
        try values.milliseconds("stream.initial_delay_ms", minimum: 0, &stream.initialDelay)
        try values.milliseconds("stream.max_delay_ms", minimum: 1, &stream.maximumDelay)
        try values.seconds("stream.reset_after_s", minimum: 1, &stream.resetAfter)
        try values.milliseconds("stream.idle_timeout_ms", minimum: 1, &stream.idleTimeout)
        configuration.stream = stream

        var ingest = configuration.ingest
        values.string("ingest.listen", &ingest.listen)
        if !ingest.listen.isEmpty, ingest.listenAddress == nil {
            throw ConfigurationError("'ingest.listen' must be host:port (or \"\" to disable), got '\(ingest.listen)'")
        }
        try values.choice("ingest.auth", &ingest.auth)
        try values.readableFile("ingest.secret_file", &ingest.secretFile)
        try values.integer("ingest.max_body_bytes", minimum: 1, maximum: 1 << 30, &ingest.maximumBodyBytes)
        try values.integer("ingest.max_notifications", minimum: 1, maximum: 1_000_000, &ingest.maximumNotifications)
        try values.seconds("ingest.dedupe_window_s", minimum: 0, &ingest.dedupeWindow)
        try values.integer("ingest.high_water_jobs", minimum: 1, maximum: 100_000_000, &ingest.highWaterJobs)
        try values.milliseconds("ingest.read_timeout_ms", minimum: 1, &ingest.readTimeout)
        try values.integer("ingest.max_connections", minimum: 1, maximum: 1_000_000, &ingest.maximumConnections)
        configuration.ingest = ingest

        try values.integer("sync.max_attempts", minimum: 1, maximum: 1_000, &configuration.sync.maximumAttempts)
        try values.integer("sync.page_size", minimum: 1, maximum: 100_000, &configuration.sync.pageSize)

        values.string("store.state_dir", &configuration.store.stateDirectory)
        try values.choice("store.durability", &configuration.store.durability)

        if let text = values.raw("log.level") {
            guard let level = Logger.Level(rawValue: text) else {
                throw ConfigurationError("'log.level' must be one of trace, debug, info, notice, warning, error, critical, got '\(text)'")
            }
            configuration.log.level = level
        }
        try values.choice("log.format", &configuration.log.format)
    }

    /// `store.state_dir`, else `$STATE_DIRECTORY`, else `$XDG_STATE_HOME/orderlive`, else
    /// `~/.local/state/orderlive`.
    static func resolveStateDirectory(_ configured: String, _ environment: [String: String]) throws(ConfigurationError) -> String {
        if !configured.isEmpty { return configured }
        if let systemd = environment["STATE_DIRECTORY"]?.split(separator: ":").first, !systemd.isEmpty {
            return String(systemd)
        }
        if let xdg = environment["XDG_STATE_HOME"], !xdg.isEmpty { return xdg + "/orderlive" }
        if let home = environment["HOME"], !home.isEmpty { return home + "/.local/state/orderlive" }
        throw ConfigurationError("no state directory: set store.state_dir (or STATE_DIRECTORY, XDG_STATE_HOME or HOME)")
    }
}
