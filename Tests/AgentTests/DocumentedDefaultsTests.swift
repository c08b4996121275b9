import Agent
import Foundation
import Testing

/// Every default is written once, in the components' `Configuration()`; `Config/orderlive.yaml` is
/// tied to it by ``ConfigurationTests/theDocumentedFileHoldsExactlyTheDefaults()``, and the documents
/// are tied to the yaml here: the keys the code reads, the keys of the yaml and the keys of
/// docs/CONFIGURATION.md are the same, with the same defaults and environment names, and a default
/// the README or a page of docs/ states in prose is the yaml's.
@Suite(.timeLimit(.minutes(1))) struct DocumentedDefaultsTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    /// `section.key` to its value as the yaml writes it (quotes removed, comment dropped).
    static func yamlDefaults() throws -> [String: String] {
        let text = try String(contentsOf: root.appendingPathComponent("Config/orderlive.yaml"), encoding: .utf8)
        var defaults: [String: String] = [:]
        var section = ""
        var group = ""
        for line in text.split(separator: "\n") where !line.hasPrefix("#") {
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            if trimmed.hasPrefix("#") { continue }
            if !line.hasPrefix(" "), line.hasSuffix(":") {
                (section, group) = (String(line.dropLast()), "")
                continue
            }
            // A group of keys (`  tls:`): its keys are indented by four.
            if line.hasPrefix("  "), !line.hasPrefix("   "), trimmed.hasSuffix(":") {
                group = String(trimmed.dropLast()) + "."
                continue
            }
            if !line.hasPrefix("    ") { group = "" }
            guard let colon = trimmed.firstIndex(of: ":") else { continue }
            var value = trimmed[trimmed.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            if value.hasPrefix("\"") {
                value = String(value.dropFirst().prefix { $0 != "\"" })
            } else {
                value = String(value.prefix { $0 != "#" }).trimmingCharacters(in: .whitespaces)
            }
            defaults[section + "." + group + trimmed[..<colon]] = value
        }
        return defaults
    }

    /// The README and every page of docs/, one after the other.
    static func documents() throws -> String {
        let docs = root.appendingPathComponent("docs")
        let pages = try FileManager.default.contentsOfDirectory(atPath: docs.path).filter { $0.hasSuffix(".md") }.sorted()
        return try (["README.md"] + pages.map { "docs/" + $0 }).map {
            try String(contentsOf: root.appendingPathComponent($0), encoding: .utf8)
        }.joined(separator: "\n")
    }

    @Test func everyDefaultTheDocumentsStateIsTheConfigurationsDefault() throws {
        let defaults = try Self.yamlDefaults()
        let text = try Self.documents().replacingOccurrences(of: "\n", with: " ")
            .replacingOccurrences(of: #"\s+"#, with: " ", options: .regularExpression)
        // "`ingest.max_connections` connections (default 1024)", "`api.listen`, default `127.0.0.1:8090`",
        // "(`api.history_changes`, default the last 100,000)".
        // "(default 4 days)" for a `_s` key is 345600.
        let pattern = try Regex(
            #"`([a-z0-9_]+\.[a-z0-9_]+)`[^`()]{0,40}?[(,] ?default,? (?:the last )?`?([^`);, ]+(?:,[0-9]{3})*)`?(?: (days|hours|minutes|seconds))?"#)
        let seconds = ["days": 86_400, "hours": 3_600, "minutes": 60, "seconds": 1]
        var checked = 0
        for match in text.matches(of: pattern) {
            guard let key = match.output[1].substring.map(String.init), var stated = match.output[2].substring.map(String.init),
                  let value = defaults[key] else { continue }
            stated = stated.replacingOccurrences(of: ",", with: "")
            if let unit = match.output[3].substring, let factor = seconds[String(unit)], let number = Int(stated) {
                stated = key.hasSuffix("_ms") ? "\(number * factor * 1_000)" : "\(number * factor)"
            }
            checked += 1
            #expect(stated == value,
                    "the documents say \(key) defaults to \(String(match.output[0].substring ?? "")); Config/orderlive.yaml (the code's default) says \(value)")
        }
        #expect(checked >= 5, "the documents' stated defaults were not found (\(checked)): has the wording changed?")
    }

    /// docs/CONFIGURATION.md's key tables: key to (default, environment variable).
    static func documentedKeys() throws -> [String: (value: String, environment: String)] {
        let text = try String(contentsOf: root.appendingPathComponent("docs/CONFIGURATION.md"), encoding: .utf8)
        var keys: [String: (value: String, environment: String)] = [:]
        let row = try Regex(#"^\| `([a-z0-9_.]+)` \| `([^`]*)` \| `([A-Z0-9_]+)` \|"#)
        for line in text.split(separator: "\n") {
            guard let match = try row.firstMatch(in: String(line)),
                  let key = match.output[1].substring, let value = match.output[2].substring,
                  let environment = match.output[3].substring else { continue }
            keys[String(key)] = (value == #""""# ? "" : String(value), String(environment))
        }
        return keys
    }

    /// One source of truth for the keys (issue 42): the code's keys (what the readers ask for, the
    /// same list that refuses an unknown key), Config/orderlive.yaml's and docs/CONFIGURATION.md's
    /// are one set; the document's defaults are the yaml's (which are the code's) and its
    /// environment names the loader's. `python3 Scripts/configuration-doc.py` rewrites the tables.
    @Test func theCodeTheSampleAndTheConfigurationPageHaveTheSameKeys() throws {
        let code = Set(ConfigurationLoader.keys)
        let yaml = try Self.yamlDefaults()
        let documented = try Self.documentedKeys()
        #expect(code.count > 50, "the code's key list: \(code.count)")
        #expect(Set(yaml.keys) == code,
                "Config/orderlive.yaml lacks \(code.subtracting(yaml.keys).sorted()), has unknown \(Set(yaml.keys).subtracting(code).sorted())")
        #expect(Set(documented.keys) == code,
                "docs/CONFIGURATION.md lacks \(code.subtracting(documented.keys).sorted()), has unknown \(Set(documented.keys).subtracting(code).sorted()); run python3 Scripts/configuration-doc.py")
        for (key, entry) in documented {
            #expect(entry.value == yaml[key], "docs/CONFIGURATION.md: \(key) defaults to '\(entry.value)', the yaml (and the code) to '\(yaml[key] ?? "nothing")'")
            #expect(entry.environment == ConfigurationLoader.environmentName(for: key), "docs/CONFIGURATION.md: \(key)'s variable")
        }
    }
}
