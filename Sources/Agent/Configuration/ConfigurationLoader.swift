import Configuration
public import Foundation
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
    /// Every key the file and the environment may set: those the section readers ask for (read once
    /// over no providers, so every key is asked and none is set).
    public static let keys: [String] = {
        let asked = AskedKeys()
        _ = try? OrderliveConfiguration(reading: ConfigurationReader(ConfigReader(providers: [InMemoryProvider(values: [:])]), asked: asked))
        return asked.all
    }()

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
        var configuration = try OrderliveConfiguration(reading: ConfigurationReader(ConfigReader(providers: providers)))
        configuration.sourceFile = file
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
            try checkKeys(fields, under: section, file: file)
        }
    }

    /// Checks the keys of one mapping: each must be known and a single value, or a group of keys
    /// (`ingest.tls:` holding `certificate_file`, ...) whose own keys are checked the same way.
    private static func checkKeys(_ fields: Node.Mapping, under prefix: String, file: String) throws(ConfigurationError) {
        for (nameNode, value) in fields {
            let key = "\(prefix).\(nameNode.string ?? "\(nameNode)")"
            if let group = value.mapping, keys.contains(where: { $0.hasPrefix(key + ".") }) {
                try checkKeys(group, under: key, file: file)
                continue
            }
            guard keys.contains(key) else {
                throw ConfigurationError("unknown key '\(key)' in \(file)\(suggestion(for: key, among: keys))")
            }
            if value.mapping != nil || value.sequence != nil {
                throw ConfigurationError("'\(key)' in \(file) must be a single value, not a list or mapping")
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
