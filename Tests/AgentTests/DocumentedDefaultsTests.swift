import Foundation
import Testing

/// Every default is written once, in the components' `Configuration()`; `Config/orderlive.yaml` is
/// tied to it by ``ConfigurationTests/theDocumentedFileHoldsExactlyTheDefaults()``, and the README is
/// tied to the yaml here: a default the README states is the yaml's, and every key the yaml has is
/// named in the README's configuration section.
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

    static func readme() throws -> String {
        try String(contentsOf: root.appendingPathComponent("README.md"), encoding: .utf8)
    }

    @Test func everyDefaultTheReadmeStatesIsTheConfigurationsDefault() throws {
        let defaults = try Self.yamlDefaults()
        let text = try Self.readme().replacingOccurrences(of: "\n", with: " ")
            .replacingOccurrences(of: #"\s+"#, with: " ", options: .regularExpression)
        // "`ingest.max_connections` connections (default 1024)", "`api.listen`, default `127.0.0.1:8090`",
        // "(`api.history_changes`, default the last 100,000)".
        // "(default 4 days)" for a `_s` key is 345600.
        let pattern = try Regex(
            #"`([a-z_]+\.[a-z_]+)`[^`()]{0,40}?[(,] ?default,? (?:the last )?`?([^`);, ]+(?:,[0-9]{3})*)`?(?: (days|hours|minutes|seconds))?"#)
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
                    "README says \(key) defaults to \(String(match.output[0].substring ?? "")); Config/orderlive.yaml (the code's default) says \(value)")
        }
        #expect(checked >= 5, "the README's stated defaults were not found (\(checked)): has the wording changed?")
    }

    @Test func everyKeyOfTheYamlIsNamedInTheReadmesConfigurationSection() throws {
        let text = try Self.readme()
        let section = try #require(text.components(separatedBy: "\n## Configuration\n").last?
            .components(separatedBy: "\n## Operations\n").first)
        for key in try Self.yamlDefaults().keys.sorted() {
            let name = String(key.split(separator: ".").dropFirst().joined(separator: "."))
            #expect(section.contains("`\(name)`") || section.contains("`\(key)`") || section.contains("`\(key.split(separator: ".").first ?? "").\(name)"),
                    "\(key) is in Config/orderlive.yaml but not in the README's Configuration section")
        }
    }
}
