// With BENCH_WEBHOOK=1 the ingest and change-feed benchmarks run the agent with one enabled outgoing
// webhook endpoint (issue 40): a bare Hummingbird receiver answering 200, in a process of its own
// (`orderlive-bench webhook-receiver`), so the agent's CPU figures hold only the agent's side of each
// delivery. The figures with and without it are in PERFORMANCE.md.

import Agent
import Foundation
import Hummingbird
import Logging
import StoreModel

/// True when the benchmarks add one webhook endpoint.
var benchWebhookEnabled: Bool { ProcessInfo.processInfo.environment["BENCH_WEBHOOK"] == "1" }

/// `orderlive-bench webhook-receiver`: answers 200 to every POST /hook until killed.
func runBenchWebhookReceiver() async throws {
    let router = Router()
    router.post("/hook") { request, _ in
        _ = try await request.body.collect(upTo: 1 << 20)
        return HTTPResponse.Status.ok
    }
    let app = Application(
        router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)),
        onServerRunning: { channel in say("webhook receiver listening on port \(channel.localAddress?.port ?? 0)") },
        logger: Logger(label: "bench-webhook", factory: { _ in SwiftLogNoOpLogHandler() }))
    try await app.run()
}

/// Starts the receiver's process and adds it as an endpoint of `program`'s store; nil without BENCH_WEBHOOK=1.
func addBenchWebhook(to program: AgentProgram) async throws -> BenchAgent? {
    guard benchWebhookEnabled else { return nil }
    let log = FileManager.default.temporaryDirectory.appendingPathComponent("orderlive-bench-hook-\(getpid()).log").path
    let receiver = try BenchAgent(executable: benchExecutable, arguments: ["webhook-receiver"], log: log)
    guard await receiver.wait(for: "webhook receiver listening on port", timeout: .seconds(60)) != nil,
          let port = receiver.line(containing: "webhook receiver listening on port")?.split(separator: " ").last.flatMap({ Int($0) })
    else {
        receiver.kill()
        throw BenchFailure("the webhook receiver did not start: \(receiver.tail())")
    }
    _ = try await program.store.addWebhookEndpoint(NewWebhookEndpoint(
        url: "http://127.0.0.1:\(port)/hook", secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"))
    return receiver
}
