import Agent
import AsyncSignals
import SQLiteStore
import StoreModel
import TestHarnesses
import Testing

/// `/readyz`, `/api/status` and `/metrics` answer from what the agent last saw of its store (issue 41).
@Suite(.timeLimit(.minutes(1))) struct StoreObservationTests {
    /// Each request sees a read that began after it arrived (the store changed a moment ago: the
    /// answer has it); the store counts as unreadable once its last answer is older than `stale`,
    /// and the reason says how long ago it answered.
    @Test func eachAnswerIsCurrentAndGoesStaleAfterItsBound() async throws {
        let temporary = try TemporaryStore()
        let wall = Locked(1_000.0)
        let observation = StoreObservation(
            store: temporary.store, period: .seconds(1), stale: .seconds(5), now: { wall.withLock { $0 } })
        let first = await observation.seen(waiting: .seconds(10))
        #expect(first.answeredAt == 1_000 && first.status?.counts.orders == 0 && first.failure == nil)
        #expect(observation.problem(in: first) == nil)

        try temporary.store.applyPage([order(7, status: "assigned")])
        wall.withLock { $0 = 1_002 }
        let second = await observation.seen(waiting: .seconds(10))
        #expect(second.answeredAt == 1_002 && second.status?.counts.orders == 1)

        // An answer older than `stale` makes the store unreadable, saying since when.
        wall.withLock { $0 = 1_009 }
        #expect(observation.problem(in: second) == "it has not answered for 7.0 s")
    }
}
