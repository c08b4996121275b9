import Agent
import CurlHTTP
import Foundation
import Logging
import PushIngest
import StoreModel
import Testing
import TestKit

/// `Deploy/prometheus` and `Deploy/grafana` against the tools that load them and the agent they
/// describe (issue 13 part 8): the rules pass `promtool check rules` and their own unit tests
/// (`promtool test rules`), and every metric and label they and the dashboard name is one a running
/// agent exports, while every metric the agent exports has a place on the dashboard.
@Suite(.timeLimit(.minutes(5))) struct OperationsKitTests {
    static let rules = "Deploy/prometheus/orderlive.rules.yml"
    static let ruleTests = "Deploy/prometheus/orderlive.rules.test.yml"
    static let dashboard = "Deploy/grafana/orderlive-dashboard.json"

    /// promtool comes from Debian's `prometheus` package, which `make deps` installs; a machine
    /// without it fails here rather than skipping the check.
    static func promtool() throws -> String {
        try #require(executable("promtool", candidates: ["/usr/bin/promtool"]),
                     "promtool is not installed: run `make deps` (Debian's prometheus package)")
    }

    @Test func alertRulesLoadAndPassTheirUnitTests() async throws {
        let tool = try Self.promtool()
        let check = try await runTool(tool, ["check", "rules", DeployTests.root.appendingPathComponent(Self.rules).path])
        #expect(check.status == 0, "\(check.output)")
        #expect(check.output.contains("SUCCESS"))
        let unit = try await runTool(tool, ["test", "rules", URL(fileURLWithPath: Self.ruleTests).lastPathComponent],
                                     directory: DeployTests.root.appendingPathComponent("Deploy/prometheus"))
        #expect(unit.status == 0, "\(unit.output)")

        // Every alert is shown firing by at least one unit test, and the issue's five conditions
        // each have an alert.
        let alerts = Self.matches(#"- alert: (\w+)"#, in: try DeployTests.text(Self.rules))
        let tested = Set(Self.matches(#"alertname: (\w+)"#, in: try DeployTests.text(Self.ruleTests)))
        #expect(!alerts.isEmpty)
        for alert in alerts { #expect(tested.contains(alert), "\(alert) has no unit test") }
        let text = try DeployTests.text(Self.rules)
        for metric in ["orderlive_stream_open", "orderlive_journal_oldest_job_age_seconds", "orderlive_dead_letters",
                       "orderlive_store_writable", "orderlive_auth_authenticated"] {
            #expect(text.contains("expr: \(metric)"), "no alert on \(metric)")
        }
    }

    @Test func rulesAndDashboardNameWhatTheAgentExports() async throws {
        let exported = try await Self.exportedFamilies()
        #expect(exported.count >= 20, "\(exported.keys.sorted())")

        let rules = try DeployTests.text(Self.rules)
        let dashboard = try #require(
            try JSONSerialization.jsonObject(with: Data(try DeployTests.text(Self.dashboard).utf8)) as? [String: Any])
        #expect(dashboard["uid"] as? String == "orderlive")
        let expressions = Self.matches(#"expr: (.+)"#, in: rules) + Self.strings(forKey: "expr", in: dashboard)
            + Self.strings(forKey: "definition", in: dashboard)
        #expect(expressions.count > 20)

        for expression in expressions {
            // An expression whose metric the reader cannot find would otherwise check nothing (only
            // the scrape alert is on Prometheus' own `up`).
            let selectors = Self.selectors(in: expression)
            #expect(!selectors.isEmpty || expression.hasPrefix("up{"), "no orderlive_ metric read in `\(expression)`")
            for (name, labels) in selectors {
                let family = Self.family(of: name, in: exported)
                let exportedLabels = try #require(family.flatMap { exported[$0] }, "\(name) in `\(expression)` is not exported by the agent")
                for (label, values) in labels where label != "instance" && label != "job" {
                    let known = try #require(exportedLabels[label], "\(name) has no label \(label) (`\(expression)`)")
                    for value in values { #expect(known.contains(value), "\(name){\(label)=\"\(value)\"} is never exported") }
                }
            }
        }
        let dashboardText = Self.strings(forKey: "expr", in: dashboard).joined(separator: "\n")
        for family in exported.keys {
            #expect(dashboardText.contains(family), "the dashboard shows nothing of \(family)")
        }
    }

    @Test func theRunningAgentServesItsOpenAPIDocument() async throws {
        try await Self.withAgent { port, loop in
            let served = try await loop.perform(HTTPRequest(url: "http://127.0.0.1:\(port)/openapi.json"))
            #expect(served.status == 200)
            #expect(served.head.contentType?.hasPrefix("application/json") == true)
            #expect(String(decoding: served.body, as: UTF8.self) == OpenAPIDocument.json)
        }
    }

    /// Every family a running agent exports has `# HELP` and `# TYPE`, as promtool checks them.
    @Test func promtoolAcceptsTheAgentsMetrics() async throws {
        let tool = try Self.promtool()
        let text = try await Self.withAgent { port, loop in
            String(decoding: try await loop.perform(HTTPRequest(url: "http://127.0.0.1:\(port)/metrics")).body, as: UTF8.self)
        }
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("orderlive-metrics-\(UUID().uuidString).txt")
        defer { try? FileManager.default.removeItem(at: file) }
        try Data(text.utf8).write(to: file)
        let check = try await runTool("/bin/sh", ["-c", "\"$0\" check metrics < \"$1\"", tool, file.path])
        #expect(check.status == 0, "\(check.output)")
        let types = Self.matches(#"# TYPE (orderlive_[a-z0-9_]+) "#, in: text)
        let helped = Set(Self.matches(#"# HELP (orderlive_[a-z0-9_]+) "#, in: text))
        #expect(types.count >= 20)
        for family in types { #expect(helped.contains(family), "\(family) has no # HELP line") }
    }

    /// What an operator reads in Deploy/ (alert descriptions, runbooks, the README, the dashboard, the
    /// manifests) names only commands, configuration keys, environment variables and metrics that exist.
    @Test func everyCommandKeyAndMetricNamedInDeployExists() async throws {
        let files = ["Deploy/prometheus/orderlive.rules.yml", "Deploy/README.md", "Deploy/grafana/orderlive-dashboard.json",
                     "Deploy/orderlive.service", "Deploy/orderlive.yaml", "Deploy/orderlive-container.yaml",
                     "Deploy/Containerfile", "Deploy/kubernetes/orderlive.yaml", "Deploy/kubernetes/orderlive-postgres.yaml"]
        let text = try files.map { try DeployTests.text($0) }.joined(separator: "\n")

        let commands = Set(Self.matches(#"`orderlive ((?:[a-z][a-z-]*)(?: [a-z][a-z-]*)*)"#, in: text))
        #expect(commands.isSuperset(of: ["status", "dead-letters retry", "journal list", "login"]), "\(commands.sorted())")
        for command in commands {
            let words = command.split(separator: " ").map(String.init)
            let help = try await runTool(OrderliveProcess.executable.path, words + ["--help"])
            // ArgumentParser answers --help after an unknown word with the parent's help: the usage
            // line says whose help it is.
            #expect(help.status == 0 && help.output.contains("USAGE: orderlive \(command)"),
                    "`orderlive \(command)` is named in Deploy/ but is no command: \(help.output.prefix(300))")
        }

        let keys = Set(ConfigurationLoader.keys)
        let named = Set(Self.matches(#"\b((?:upstream|auth|stream|ingest|sync|store|api|log)(?:\.[a-z_]+)+)\b"#, in: text))
        #expect(named.count >= 10, "\(named.sorted())")
        for key in named { #expect(keys.contains(key), "\(key) is named in Deploy/ but is no configuration key") }
        let variables = Set(keys.map(ConfigurationLoader.environmentName(for:)) + [ConfigurationLoader.passwordVariable])
        for variable in Set(Self.matches(#"\b(ORDERLIVE_[A-Z_]+)\b"#, in: text)) {
            #expect(variables.contains(variable), "\(variable) is named in Deploy/ but orderlive reads no such variable")
        }

        let exported = try await Self.exportedFamilies()
        for metric in Set(Self.matches(#"\b(orderlive_[a-z0-9_]+)\b"#, in: text)) {
            #expect(Self.family(of: metric, in: exported) != nil, "\(metric) is named in Deploy/ but not exported")
        }
    }

    // MARK: The agent's metrics

    /// The families a running agent exports, each with its labels and the values seen for them.
    static func exportedFamilies() async throws -> [String: [String: Set<String>]] {
        try await withAgent { port, loop in
            let response = try await loop.perform(HTTPRequest(url: "http://127.0.0.1:\(port)/metrics"))
            #expect(response.status == 200)
            var families: [String: [String: Set<String>]] = [:]
            var histograms: Set<String> = []
            for line in String(decoding: response.body, as: UTF8.self).split(separator: "\n") {
                if line.hasPrefix("# TYPE ") {
                    let parts = line.split(separator: " ")
                    guard parts.count == 4 else { continue }
                    families[String(parts[2]), default: [:]] = [:]
                    if parts[3] == "histogram" { histograms.insert(String(parts[2])) }
                    continue
                }
                guard !line.hasPrefix("#") else { continue }
                for (name, labels) in selectors(in: String(line)) {
                    var family = name
                    for suffix in ["_bucket", "_sum", "_count"] where histograms.contains(String(name.dropLast(suffix.count))) && name.hasSuffix(suffix) {
                        family = String(name.dropLast(suffix.count))
                    }
                    for (label, values) in labels where label != "le" {
                        families[family, default: [:]][label, default: []].formUnion(values)
                    }
                }
            }
            // Histogram series are named by their family plus a suffix: keep the suffixed names
            // resolvable too.
            for histogram in histograms {
                for suffix in ["_bucket", "_sum", "_count"] { families[histogram + suffix] = families[histogram] }
            }
            return families.filter { $0.key.hasPrefix("orderlive_") }
        }
    }

    /// The exported family a name in an expression refers to, if any.
    static func family(of name: String, in exported: [String: [String: Set<String>]]) -> String? {
        guard exported[name] != nil else { return nil }
        for suffix in ["_bucket", "_sum", "_count"] where name.hasSuffix(suffix) {
            let base = String(name.dropLast(suffix.count))
            if exported[base] != nil { return base }
        }
        return name
    }

    /// An agent built by ``AgentBuilder`` on port 0, with no session and a backend that is not there:
    /// every metric family is registered at start, whatever the agent is doing.
    static func withAgent<Result: Sendable>(_ body: (Int, CurlLoop) async throws -> Result) async throws -> Result {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("orderlive-opskit-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var configuration = OrderliveConfiguration()
        configuration.upstream.baseURL = "http://127.0.0.1:9"
        configuration.ingest.listen = "127.0.0.1:0"
        configuration.api.listen = "127.0.0.1:0"
        configuration.store.stateDirectory = directory
        let program = try AgentBuilder.build(configuration: configuration, logger: quietLogger, environment: [:])
        // One webhook endpoint, so its families are exported too.
        _ = try await program.store.addWebhookEndpoint(NewWebhookEndpoint(
            url: "http://127.0.0.1:9/hook", secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"))
        let running = Task { try await program.run(handlingSignals: false) }
        let port = try #require(await program.pushServer?.port)
        let loop = try CurlLoop(logger: quietLogger)
        do {
            let result = try await body(port, loop)
            await loop.shutdown()
            await program.shutdown()
            try await running.value
            return result
        } catch {
            await loop.shutdown()
            await program.shutdown()
            _ = try? await running.value
            throw error
        }
    }

    // MARK: Reading PromQL and Prometheus text

    /// Every `orderlive_…` series name in `text`, with the label matchers written beside it; a
    /// `=~"a|b"` matcher gives each alternative as a value.
    static func selectors(in text: String) -> [(String, [String: Set<String>])] {
        let pattern = #"(orderlive_[a-z0-9_]+)(\{([^}]*)\})?"#
        guard let expression = try? NSRegularExpression(pattern: pattern) else { return [] }
        let source = text as NSString
        return expression.matches(in: text, range: NSRange(location: 0, length: source.length)).map { match in
            let name = source.substring(with: match.range(at: 1))
            var labels: [String: Set<String>] = [:]
            if match.range(at: 3).location != NSNotFound {
                for matcher in source.substring(with: match.range(at: 3)).split(separator: ",") {
                    let parts = matcher.split(separator: "\"", omittingEmptySubsequences: false)
                    guard parts.count >= 2 else { continue }
                    let label = parts[0].trimmingCharacters(in: .whitespaces).trimmingCharacters(in: CharacterSet(charactersIn: "=~!"))
                    let value = String(parts[1])
                    // Template variables ($instance) and regex wildcards say nothing about the values.
                    // The label is still checked to exist; no value is.
                    guard !value.contains("$"), !value.contains(".*") else {
                        if labels[label] == nil { labels[label] = [] }
                        continue
                    }
                    labels[label, default: []].formUnion(value.split(separator: "|").map(String.init))
                }
            }
            return (name, labels)
        }
    }

    static func matches(_ pattern: String, in text: String) -> [String] {
        guard let expression = try? NSRegularExpression(pattern: pattern) else { return [] }
        let source = text as NSString
        return expression.matches(in: text, range: NSRange(location: 0, length: source.length)).map {
            source.substring(with: $0.range(at: 1))
        }
    }

    /// Every string under `key` anywhere in a JSON value.
    static func strings(forKey key: String, in value: Any) -> [String] {
        if let object = value as? [String: Any] {
            return object.flatMap { entry -> [String] in
                if entry.key == key, let text = entry.value as? String { return [text] }
                return strings(forKey: key, in: entry.value)
            }
        }
        if let array = value as? [Any] { return array.flatMap { strings(forKey: key, in: $0) } }
        return []
    }
}
