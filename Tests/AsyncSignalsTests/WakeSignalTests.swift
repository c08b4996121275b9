import AsyncSignals
import Testing
import TestSupport

/// A waiter is woken early far more often than it reaches its deadline (the change hub after every
/// commit), and a cancelled sleep keeps its memory until its deadline: the wait sleeps in slices.
@Suite struct WakeSignalTests {
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

    @Test func aSignalEndsTheWaitBeforeItsDeadline() async {
        let clock = ManualClock()
        let signal = WakeSignal()
        let start = clock.now
        let waiter = Task { await signal.wait(until: start.advanced(by: .seconds(15)), clock: clock) }
        while clock.pendingDeadlines.isEmpty { await Task.yield() }
        signal.signal()
        await waiter.value
        #expect(clock.now == start)
    }
}
