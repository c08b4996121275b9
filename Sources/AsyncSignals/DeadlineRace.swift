/// One way to bound a wait that may never end (DESIGN §10 "every wait has a deadline"): `work` runs
/// in a task of its own, a watcher beside it may settle the call with an error first (a deadline that
/// passed, a connection found closed), and so may the caller's cancellation. Whichever settles
/// first is the answer; the watcher is then cancelled, and so is the work when it lost — cancelled
/// and *abandoned*, never awaited, because the waits this bounds (a query on a connection that
/// stopped answering, PostgresNIO 1.33) were seen never to return, and a task group would wait for
/// them. Neither task outlives its purpose: the watcher ends when cancelled, the work when it
/// returns or honours its cancellation.
public enum DeadlineRace {
    /// Gives the call this failure unless it is settled already; true when it settled it.
    public typealias Settle = @Sendable (any Error) -> Bool

    /// Runs `work` against `watch` (see ``DeadlineRace``). `watch` is given the way to settle the
    /// call with a failure; it is cancelled once the call is settled, however that happened.
    public static func run<T: Sendable>(
        _ work: @escaping @Sendable () async throws -> T,
        watch: @escaping @Sendable (_ settle: @escaping Settle) async -> Void
    ) async throws -> T {
        let outcome = OneShot<Result<T, any Error>>()
        let worker = Task {
            do {
                _ = outcome.give(.success(try await work()))
            } catch {
                _ = outcome.give(.failure(error))
            }
        }
        let watcher = Task {
            await watch { error in outcome.give(.failure(error)) }
        }
        let result = await withTaskCancellationHandler {
            await outcome.value
        } onCancel: {
            _ = outcome.give(.failure(CancellationError()))
        }
        watcher.cancel()
        if case .failure = result { worker.cancel() }
        return try result.get()
    }

    /// Runs `work`; after `limit` the call fails with `timeout()`'s error instead, and `timedOut`
    /// runs (to close what the work was waiting on).
    public static func run<T: Sendable>(
        within limit: Duration, timeout: @escaping @Sendable () -> any Error,
        timedOut: @escaping @Sendable () -> Void = {}, _ work: @escaping @Sendable () async throws -> T
    ) async throws -> T {
        try await run(work) { settle in
            do {
                try await Task.sleep(for: limit)
            } catch {
                return
            }
            if settle(timeout()) { timedOut() }
        }
    }
}
