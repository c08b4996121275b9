import Agent
import Foundation
import Sandbox

/// The agent against the Sandbox, as the in-process agent tests build it: one configuration (the
/// Sandbox's base URL and demo user, both listeners on port 0, the state in a temporary directory)
/// and the environment that gives the demo user's password. Each test changes what it is about.
enum SandboxedAgent {
    /// `ORDERLIVE_AUTH_PASSWORD` for the Sandbox's demo user, as `AgentBuilder.build(environment:)` reads it.
    static let environment = ["ORDERLIVE_AUTH_PASSWORD": SandboxUser.demo.password]

    /// A fresh temporary state directory's path (not created), named after the test.
    static func stateDirectory(_ name: String) -> String {
        FileManager.default.temporaryDirectory.appendingPathComponent("orderlive-\(name)-\(UUID().uuidString)").path
    }

    /// The agent's configuration against `sandbox`, its state in `directory`; `api` false leaves the
    /// orders API off.
    static func configuration(_ sandbox: Sandbox, directory: String, api: Bool = true) async -> OrderliveConfiguration {
        var configuration = OrderliveConfiguration()
        configuration.upstream.baseURL = await sandbox.baseURL
        configuration.auth.identifier = SandboxUser.demo.identifier
        configuration.ingest.listen = "127.0.0.1:0"
        configuration.api.listen = api ? "127.0.0.1:0" : ""
        configuration.store.stateDirectory = directory
        return configuration
    }
}
