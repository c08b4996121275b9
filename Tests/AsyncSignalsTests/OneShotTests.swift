import AsyncSignals
import Testing

@Suite(.timeLimit(.minutes(3))) struct OneShotTests {
    @Test func waitersBeforeAndAfterTheValueAllGetTheFirstValue() async {
        let shot = OneShot<Int>()
        #expect(shot.current == nil)
        let (started, starting) = AsyncStream.makeStream(of: Void.self)
        let early = Task {
            starting.yield()
            return await shot.value
        }
        var iterator = started.makeAsyncIterator()
        _ = await iterator.next()
        #expect(shot.give(7))
        #expect(!shot.give(8), "a second value must not replace the first")
        #expect(await early.value == 7)
        #expect(await shot.value == 7)
        #expect(shot.current == 7)
    }

    @Test func manyWaitersAreResumedTogether() async {
        let shot = OneShot<String>()
        await withTaskGroup(of: String.self) { group in
            for _ in 0..<50 { group.addTask { await shot.value } }
            shot.give("ready")
            var seen = 0
            for await value in group {
                #expect(value == "ready")
                seen += 1
            }
            #expect(seen == 50)
        }
    }

    @Test func aStopFlagRunsItsActionOnceWhetherRegisteredBeforeOrAfter() {
        let before = StopFlag()
        let counter = OneShot<Bool>()
        before.onStop { counter.give(true) }
        #expect(counter.current == nil)
        before.stop()
        #expect(before.isStopped && counter.current == true)
        let after = StopFlag()
        after.stop()
        let late = OneShot<Bool>()
        after.onStop { late.give(true) }
        #expect(late.current == true)
    }
}
