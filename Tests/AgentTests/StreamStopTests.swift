import Agent
import CurlHTTP
import Foundation
import Sandbox
import TestHarnesses
import TestKit
import Testing
import Logging
import OrdersAPI

/// A `204` from the backend's stream ends the stream service, not the agent (DESIGN §3: the backend
/// asks the client to stop streaming): the orders API and the push endpoint go on answering, and a
/// graceful shutdown later ends the agent cleanly.
@Suite(.timeLimit(.minutes(3))) struct StreamStopTests {
    @Test func aTwoHundredFourEndsTheStreamAndTheAgentRunsOn() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("orderlive-204-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let sandboxConfiguration = SandboxConfiguration(port: 0, auth: SandboxAuthConfiguration(requiresAuthentication: true))
        try await Sandbox.withRunning(sandboxConfiguration) { sandbox in
            sandbox.enqueue(.status(204))
            let configuration = await SandboxedAgent.configuration(sandbox, directory: directory)
            let logs = CapturedLogs()
            let program = try AgentBuilder.build(
                configuration: configuration, logger: logs.logger(level: .info),
                environment: SandboxedAgent.environment)
            let running = Task { try await program.run(handlingSignals: false) }
            let apiPort = try #require(await program.apiServer?.port)
            let ended = await logs.wait(for: "the backend answered 204: the stream stays stopped until restart", within: .seconds(30))
            #expect(ended, "the stream service saw the 204")
            let loop = try CurlLoop(logger: quietLogger)
            for _ in 0..<3 {
                let answer = try await loop.perform(HTTPRequest(url: "http://127.0.0.1:\(apiPort)/v1/orders"))
                #expect(answer.status == 200, "the agent runs on after its stream ended")
            }
            await loop.shutdown()
            await program.shutdown()
            try await running.value
        }
    }
}
