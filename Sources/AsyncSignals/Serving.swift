/// Runs `serve` (a server, a service group) beside `body`, and ends it the graceful way: when
/// `body` returns or throws, `stop` asks the server to end, and the call returns only once `serve`
/// has. A server's task is never cancelled: cancelling one can trap in swift-nio when a connection
/// was accepted but not yet served (apple/swift-nio#2637), and that trap ends the whole process.
/// `body`'s error wins over one from `serve` after it; `serve`'s own error is thrown when `body`
/// succeeded.
public func withServing<Result: Sendable>(
    _ serve: @escaping @Sendable () async throws -> Void,
    stop: () async -> Void,
    _ body: () async throws -> Result
) async throws -> Result {
    try await withThrowingTaskGroup(of: Void.self) { group in
        group.addTask { try await serve() }
        let result: Result
        do {
            result = try await body()
        } catch {
            await stop()
            try? await group.waitForAll()
            throw error
        }
        await stop()
        try await group.waitForAll()
        return result
    }
}
