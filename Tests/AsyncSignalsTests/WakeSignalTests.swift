import AsyncSignals
import Testing
import TestKit

/// A waiter is woken early far more often than it reaches its deadline (the change hub after every
/// commit), and a cancelled sleep keeps its memory until its deadline: the wait sleeps in slices.
@Suite(.timeLimit(.minutes(3))) struct WakeSignalTests {
    @Test func aWaitSleepsAtMostASecondAtATimeAndEndsAtItsDeadline() async {
        let clock = ManualClock()
        let signal = WakeSignal()
        let deadline = clock.now.advanced(by: .seconds(15))
        let waiter = Task { await signal.wait(until: deadline, clock: clock) }
        var slices = 0
        while clock.now < deadline {
            while clock.pendingDeadlines.isEmpty { await Task.yield() }
            let latest = clock.now.advanced(by: .seconds(1))
            #expect(clock.pendingDeadlines.allSatisfy { $0 <= latest }, "\(clock.pendingDeadlines) against \(latest)")
            clock.advance(by: .seconds(1))
            slices += 1
        }
        await waiter.value
        #expect(slices == 15)
    }

    /// The manual clock never reaches the deadline here, so only the signal can end the wait: a
    /// signal that did not would leave the waiter suspended, and the time limit fails the test.
    @Test(.timeLimit(.minutes(1))) func aSignalEndsTheWaitBeforeItsDeadline() async {
        let clock = ManualClock()
        let signal = WakeSignal()
        let start = clock.now
        let ended = OneShot<Void>()
        let waiter = Task {
            await signal.wait(until: start.advanced(by: .seconds(15)), clock: clock)
            _ = ended.give(())
        }
        while clock.pendingDeadlines.isEmpty { await Task.yield() }
        #expect(ended.current == nil, "the wait ended before the signal")
        signal.signal()
        await waiter.value
        #expect(ended.current != nil)
        #expect(clock.now == start, "ended by the signal, not by the clock reaching the deadline")
    }
}
