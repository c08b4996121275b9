import CurlHTTP
import Foundation
import Logging
import Sandbox
import Testing
import TestKit

/// Issue 11 (5): if the agent does die, the crash report Swift prints on stderr must not hold a
/// token or a secret. The agent runs logged in, streaming, with a webhook secret loaded, under the
/// backtracer setting the deployment files set; a fatal signal makes the runtime write its report.
@Suite(.timeLimit(.minutes(5))) struct CrashReportTests {
    /// The value `Deploy/orderlive.service` sets, read from the file so the two stay the same.
    static func deployedBacktraceSetting() throws -> String {
        let unit = try DeployTests.text("Deploy/orderlive.service")
        let line = try #require(unit.split(separator: "\n").first { $0.hasPrefix("Environment=SWIFT_BACKTRACE=") })
        return String(line.dropFirst("Environment=SWIFT_BACKTRACE=".count))
    }

    @Test func theCrashReportOfALoggedInAgentHoldsNoSecret() async throws {
        let setting = try Self.deployedBacktraceSetting()
        #expect(setting.contains("registers=none"))
        #expect(try DeployTests.text("Deploy/Containerfile").contains("SWIFT_BACKTRACE=\(setting)"))
        let workspace = try AgentEndToEndTests.Workspace()
        defer { try? FileManager.default.removeItem(atPath: workspace.directory) }
        let configuration = SandboxConfiguration(
            port: 0, auth: SandboxAuthConfiguration(requiresAuthentication: true), feed: .orderBook)
        try await Sandbox.withRunning(configuration) { sandbox in
            var environment = workspace.environment(baseURL: await sandbox.baseURL)
            environment["SWIFT_BACKTRACE"] = setting
            // Symbolicating at the lowest priority on a loaded machine has taken over a minute.
            let agent = try RunningAgent(["--config", workspace.configFile], environment: environment, limit: .seconds(170))
            let (child, logs) = (agent.child, agent.logs)
            // The backtracer it starts when it crashes inherits its priority: symbolicating the debug
            // binary takes a core for half a minute, which must not starve the tests beside it.
            _ = setpriority(__priority_which_t(PRIO_PROCESS.rawValue), id_t(child.process.processIdentifier), 19)
            #expect(await logs.wait(message: "stream open") != nil)
            // SIGILL is one of the signals the backtracer reports as a crash; once it has written
            // its report the process is killed for good.
            child.signal(SIGILL)
            let report = try #require(await logs.waitForRaw(within: .seconds(160)) { $0.contains("Backtrace took") })
            child.signal(SIGKILL)
            _ = await agent.finish()
            let text = logs.raw.joined(separator: "\n")
            #expect(text.contains("Program crashed") || text.contains("Crash"), "no crash report: \(report)")
            #expect(!text.contains("Registers:"), "the report prints register contents")

            let credentials = try String(contentsOfFile: workspace.directory + "/state/credentials.json", encoding: .utf8)
            let tokens = try #require(try JSONSerialization.jsonObject(with: Data(credentials.utf8)) as? [String: Any])
            var secrets = [SandboxUser.demo.password, workspace.secret, String(workspace.secret.dropFirst(6))]
            for key in ["access_token", "refresh_token"] { if let token = tokens[key] as? String { secrets.append(token) } }
            #expect(secrets.count == 5)
            for secret in secrets {
                #expect(!text.contains(secret))
                // Nor any 8-character piece of a random one (a report that prints memory shows it in
                // pieces). The demo password is made of words the logs use, so only it is skipped.
                if secret == SandboxUser.demo.password { continue }
                let characters = Array(secret)
                for start in stride(from: 0, to: max(0, characters.count - 8), by: 4) {
                    #expect(!text.contains(String(characters[start..<(start + 8)])))
                }
            }
        }
    }
}
