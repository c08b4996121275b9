import Agent
import Foundation
import Testing
import TestKit

/// `Deploy/` cannot be run here (no systemd as PID 1, no container engine, no cluster); these keep
/// it in step with the code: every configuration loads with the real loader, and points its secrets
/// where the supervisor puts them.
@Suite(.timeLimit(.minutes(5))) struct DeployTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    static func text(_ path: String) throws -> String {
        try String(contentsOf: root.appendingPathComponent(path), encoding: .utf8)
    }

    /// Loads `yaml` with the real loader. The loader checks that secret files are readable, so the
    /// supervisor's secret directory is stood in for by a temporary one holding the three files;
    /// the returned paths are mapped back, so they can be checked against what the supervisor provides.
    static func load(yaml: String, secretsIn directory: String) async throws -> OrderliveConfiguration {
        let stand = FileManager.default.temporaryDirectory.appendingPathComponent("orderlive-deploy-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: stand, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: stand) }
        for name in ["password", "ingest-secret", "credentials-key", "pg-password", "api-tokens"] {
            try Data("secret".utf8).write(to: stand.appendingPathComponent(name))
        }
        let file = stand.appendingPathComponent("orderlive.yaml")
        try Data(yaml.replacingOccurrences(of: directory + "/", with: stand.path + "/").utf8).write(to: file)
        var configuration = try await ConfigurationLoader.load(
            file: file.path, environment: ["STATE_DIRECTORY": "/var/lib/orderlive"])
        func back(_ path: String) -> String { path.replacingOccurrences(of: stand.path + "/", with: directory + "/") }
        configuration.auth.passwordFile = back(configuration.auth.passwordFile)
        configuration.ingest.secretFile = back(configuration.ingest.secretFile)
        configuration.auth.credentialsKeyFile = back(configuration.auth.credentialsKeyFile)
        configuration.store.postgresPasswordFile = back(configuration.store.postgresPasswordFile)
        configuration.api.tokensFile = back(configuration.api.tokensFile)
        return configuration
    }

    /// A Kubernetes manifest's ConfigMap file: the indented block after `orderlive.yaml: |`.
    static func embeddedFile(of manifest: String) throws -> String {
        let lines = manifest.split(separator: "\n", omittingEmptySubsequences: false)
        let start = try #require(lines.firstIndex { $0.trimmingCharacters(in: .whitespaces) == "orderlive.yaml: |" })
        var embedded: [Substring] = []
        for line in lines[(start + 1)...] {
            guard line.hasPrefix("    ") else { break }
            embedded.append(line.dropFirst(4))
        }
        return embedded.joined(separator: "\n") + "\n"
    }

    /// The secrets a configuration names, all under `directory`, with the file names given.
    static func expectSecrets(_ configuration: OrderliveConfiguration, in directory: String, names: Set<String>) {
        let paths = [configuration.auth.passwordFile, configuration.ingest.secretFile, configuration.auth.credentialsKeyFile]
        for path in paths { #expect(path.hasPrefix(directory + "/"), "\(path) is not in \(directory)") }
        #expect(Set(paths.map { String($0.dropFirst(directory.count + 1)) }) == names)
        #expect(configuration.ingest.auth != .none, "listening off loopback needs ingest authentication")
        #expect(configuration.log.format == .json)
    }

    @Test func systemdConfigurationUsesTheUnitsCredentials() async throws {
        let unit = try Self.text("Deploy/orderlive.service")
        let names = Set(unit.split(separator: "\n").compactMap { line -> String? in
            guard line.hasPrefix("LoadCredential=") else { return nil }
            return line.dropFirst("LoadCredential=".count).split(separator: ":").first.map(String.init)
        })
        #expect(names == ["password", "ingest-secret", "credentials-key"])
        #expect(unit.contains("ExecStart=/usr/local/bin/orderlive run --config /etc/orderlive/orderlive.yaml"))
        #expect(unit.contains("StateDirectory=orderlive"))
        let stop = unit.split(separator: "\n").first { $0.hasPrefix("TimeoutStopSec=") }.flatMap { Int($0.dropFirst(15)) }
        #expect((stop ?? 0) > 10, "the stop timeout must be above the 10 s graceful budget")
        let configuration = try await Self.load(yaml: try Self.text("Deploy/orderlive.yaml"), secretsIn: "/run/credentials/orderlive.service")
        #expect(configuration.store.stateDirectory == "/var/lib/orderlive", "an empty state_dir must mean $STATE_DIRECTORY")
        Self.expectSecrets(configuration, in: "/run/credentials/orderlive.service", names: names)
    }

    @Test func containerConfigurationUsesMountedSecretsAndTheStateVolume() async throws {
        let containerfile = try Self.text("Deploy/Containerfile")
        #expect(containerfile.contains("COPY Deploy/orderlive-container.yaml /etc/orderlive/orderlive.yaml"))
        #expect(containerfile.contains(#"VOLUME ["/var/lib/orderlive"]"#))
        #expect(containerfile.contains("USER orderlive"))
        #expect(containerfile.contains("http://127.0.0.1:8080/healthz"))
        let configuration = try await Self.load(yaml: try Self.text("Deploy/orderlive-container.yaml"), secretsIn: "/run/secrets")
        #expect(configuration.ingest.listen == "0.0.0.0:8080")
        #expect(configuration.store.stateDirectory == "/var/lib/orderlive")
        Self.expectSecrets(configuration, in: "/run/secrets", names: ["password", "ingest-secret", "credentials-key"])
    }

    @Test func kubernetesConfigMapMatchesItsSecretAndMounts() async throws {
        let manifest = try Self.text("Deploy/kubernetes/orderlive.yaml")
        let configuration = try await Self.load(yaml: try Self.embeddedFile(of: manifest), secretsIn: "/run/secrets/orderlive")
        Self.expectSecrets(configuration, in: "/run/secrets/orderlive", names: ["password", "ingest-secret", "credentials-key"])
        #expect(manifest.contains("mountPath: /run/secrets/orderlive"))
        #expect(manifest.contains("mountPath: /var/lib/orderlive"))
        #expect(configuration.store.stateDirectory == "/var/lib/orderlive")
        for probe in ["path: /healthz", "path: /readyz"] { #expect(manifest.contains(probe)) }
        #expect(manifest.contains("replicas: 1") && manifest.contains("type: Recreate"))
    }

    /// Three agents for one account on a managed PostgreSQL (DESIGN §12): the embedded file loads,
    /// names the database password as a mounted secret (never in the URL), and the pods may run side
    /// by side behind one Service.
    @Test func kubernetesPostgresExampleRunsSeveralAgentsForOneAccount() async throws {
        let manifest = try Self.text("Deploy/kubernetes/orderlive-postgres.yaml")
        let configuration = try await Self.load(yaml: try Self.embeddedFile(of: manifest), secretsIn: "/run/secrets/orderlive")
        Self.expectSecrets(configuration, in: "/run/secrets/orderlive", names: ["password", "ingest-secret", "credentials-key"])
        #expect(configuration.store.backend == .postgres)
        #expect(configuration.store.postgresPasswordFile == "/run/secrets/orderlive/pg-password")
        #expect(configuration.api.tokensFile == "/run/secrets/orderlive/api-tokens")
        #expect(configuration.store.postgresURL.contains("sslmode=verify-full"))
        #expect(!configuration.store.postgresURL.contains(":replace-me@"))
        for secret in ["pg-password:", "api-tokens:", "password:", "ingest-secret:", "credentials-key:"] {
            #expect(manifest.contains("  \(secret)"), "the Secret has no \(secret)")
        }
        #expect(manifest.contains("replicas: 3") && !manifest.contains("type: Recreate"))
        for probe in ["path: /healthz", "path: /readyz"] { #expect(manifest.contains(probe)) }
    }

    /// systemd-analyze comes from Debian's systemd package, which `make deps` installs; where it is
    /// missing the test is reported as skipped, never passed silently.
    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/systemd-analyze"),
                   "systemd-analyze is not installed: run make deps (Debian's systemd package)"))
    func systemdUnitVerifies() async throws {
        let tool = "/usr/bin/systemd-analyze"
        let binary = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("orderlive").path
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("orderlive-unit-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let unit = directory.appendingPathComponent("orderlive.service")
        try Data(try Self.text("Deploy/orderlive.service").replacingOccurrences(of: "/usr/local/bin/orderlive", with: binary).utf8)
            .write(to: unit)
        let run = try await runTool(tool, ["verify", "--man=no", unit.path])
        #expect(run.status == 0 && run.output.isEmpty, "\(run.output)")
    }
}
