// With BENCH_WEBHOOK=1 the ingest and change-feed benchmarks run the agent with one enabled outgoing
// webhook endpoint (issue 40): a bare Hummingbird receiver in this process that answers 200, so every
// change is also signed and POSTed. The figures with and without it are in PERFORMANCE.md.

import Agent
import Foundation
import Hummingbird
import Logging
import StoreModel
import Synchronization

/// True when the benchmarks add one webhook endpoint.
var benchWebhookEnabled: Bool { ProcessInfo.processInfo.environment["BENCH_WEBHOOK"] == "1" }

/// Starts a receiver and adds it as an endpoint of `program`'s store; the task serves until cancelled.
func addBenchWebhook(to program: AgentProgram) async throws -> Task<Void, any Error>? {
    guard benchWebhookEnabled else { return nil }
    let router = Router()
    let received = Counter()
    router.post("/hook") { request, _ in
        _ = try await request.body.collect(upTo: 1 << 20)
        received.add()
        return HTTPResponse.Status.ok
    }
    let port = AsyncStream.makeStream(of: Int.self)
    let app = Application(
        router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)),
        onServerRunning: { channel in port.continuation.yield(channel.localAddress?.port ?? 0) },
        logger: Logger(label: "bench-webhook", factory: { _ in SwiftLogNoOpLogHandler() }))
    let task = Task { try await app.run() }
    var bound = 0
    for await value in port.stream { bound = value; break }
    _ = try await program.store.addWebhookEndpoint(NewWebhookEndpoint(
        url: "http://127.0.0.1:\(bound)/hook", secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"))
    return task
}

/// A count shared with the receiver's handlers.
final class Counter: Sendable {
    private let value = Mutex(0)
    func add() { value.withLock { $0 += 1 } }
    var count: Int { value.withLock { $0 } }
}
