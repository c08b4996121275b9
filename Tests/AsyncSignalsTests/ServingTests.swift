import AsyncSignals
import Testing

/// `withServing` stops its server by asking, never by cancelling, and returns only once it ended.
@Suite(.timeLimit(.minutes(1))) struct ServingTests {
    struct Broken: Error, Equatable { let name: String }

    /// A server that runs until asked to stop and records how it ended: by the stop, or cancelled.
    final class Server: Sendable {
        let stopped = OneShot<Void>()
        let ended = Locked<[String]>([])
        let failure: Broken?

        init(failing failure: Broken? = nil) { self.failure = failure }

        func serve() async throws {
            await withTaskCancellationHandler {
                await stopped.value
            } onCancel: {
                ended.withLock { $0.append("cancelled") }
                _ = stopped.give(())
            }
            ended.withLock { $0.append("stopped") }
            if let failure { throw failure }
        }
    }

    @Test func aBodyThatReturnsStopsTheServerAndWaitsForIt() async throws {
        let server = Server()
        let answer = try await withServing(server.serve, stop: { _ = server.stopped.give(()) }) {
            #expect(server.ended.withLock { $0 }.isEmpty, "the server runs while the body does")
            return 42
        }
        #expect(answer == 42)
        #expect(server.ended.withLock { $0 } == ["stopped"], "asked to stop, never cancelled, and ended before the call returned")
    }

    @Test func aBodyThatThrowsStopsTheServerAndItsErrorWins() async throws {
        let server = Server(failing: Broken(name: "server"))
        await #expect(throws: Broken(name: "body")) {
            try await withServing(server.serve, stop: { _ = server.stopped.give(()) }) { () async throws -> Int in
                throw Broken(name: "body")
            }
        }
        #expect(server.ended.withLock { $0 } == ["stopped"])
    }

    @Test func aServerThatFailsAtItsStopFailsTheCall() async throws {
        let server = Server(failing: Broken(name: "server"))
        await #expect(throws: Broken(name: "server")) {
            try await withServing(server.serve, stop: { _ = server.stopped.give(()) }) { 1 }
        }
    }
}
