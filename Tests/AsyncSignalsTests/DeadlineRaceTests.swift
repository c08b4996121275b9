import AsyncSignals
import Testing

/// ``DeadlineRace``: the first to settle answers; the loser is cancelled, and work that never
/// returns is abandoned rather than awaited. Driven by one-shots the test gives, not by sleeps.
@Suite(.timeLimit(.minutes(1))) struct DeadlineRaceTests {
    struct Late: Error, Equatable {}

    @Test func workThatAnswersFirstIsTheAnswerAndTheWatcherIsCancelled() async throws {
        let watcherEnded = OneShot<Bool>()
        let value = try await DeadlineRace.run({ 42 }, watch: { _ in
            // Waits until cancelled (the call settled), then says so.
            while !Task.isCancelled { await Task.yield() }
            watcherEnded.give(true)
        })
        #expect(value == 42)
        #expect(await watcherEnded.value, "the watcher is cancelled once the call is settled")
    }

    @Test func theWatcherSettlingFirstFailsTheCallAndCancelsTheWork() async {
        let workCancelled = OneShot<Bool>()
        let workStarted = OneShot<Void>()
        let fire = OneShot<Void>()
        let racing = Task {
            try await DeadlineRace.run({ () async throws -> Int in
                workStarted.give(())
                await withTaskCancellationHandler {
                    // Waits for a value that never comes, as a query on a dead connection does.
                    await OneShot<Void>().value
                } onCancel: {
                    workCancelled.give(true)
                }
                return 1
            }, watch: { settle in
                await fire.value
                #expect(settle(Late()), "the first to settle wins")
                #expect(!settle(Late()), "a second settle changes nothing")
            })
        }
        await workStarted.value
        fire.give(())
        await #expect(throws: Late.self) { try await racing.value }
        #expect(await workCancelled.value, "the losing work is cancelled (and never awaited: it never returns)")
    }

    @Test func theCallersCancellationEndsTheWaitAtOnce() async {
        let workStarted = OneShot<Void>()
        let racing = Task {
            try await DeadlineRace.run({ () async throws -> Int in
                workStarted.give(())
                await OneShot<Void>().value
                return 1
            }, watch: { _ in await OneShot<Void>().value })
        }
        await workStarted.value
        racing.cancel()
        await #expect(throws: CancellationError.self) { try await racing.value }
    }

    @Test func aDeadlineFailsWorkThatNeverReturnsAndRunsItsClosing() async {
        let closed = OneShot<Bool>()
        await #expect(throws: Late.self) {
            try await DeadlineRace.run(within: .milliseconds(20), timeout: { Late() }, timedOut: { closed.give(true) }) { () async -> Int in
                await OneShot<Void>().value
                return 1
            }
        }
        #expect(await closed.value)
        let fast = try? await DeadlineRace.run(within: .seconds(30), timeout: { Late() }) { 7 }
        #expect(fast == 7, "work within its deadline answers; the deadline's task is cancelled, not waited out")
    }
}
