import AsyncSignals
import Foundation
import Testing

@Suite(.timeLimit(.minutes(3))) struct LockedTests {
    /// Eight threads, 20,000 read-modify-writes each: with mutual exclusion none is lost.
    @Test func everyIncrementFromEveryThreadIsKept() async {
        let counter = Locked(0)
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            Thread.detachNewThread {
                DispatchQueue.concurrentPerform(iterations: 8) { _ in
                    for _ in 0..<20_000 { counter.withLock { $0 += 1 } }
                }
                done.resume()
            }
        }
        #expect(counter.withLock { $0 } == 160_000)
    }

    struct Refused: Error {}

    /// A body that throws leaves the change it made and releases the lock: the next `withLock` runs.
    @Test func aThrowingBodyReleasesTheLock() {
        let state = Locked([Int]())
        #expect(throws: Refused.self) {
            try state.withLock { (list: inout [Int]) throws(Refused) in
                list.append(1)
                throw Refused()
            }
        }
        let after = state.withLock { list -> [Int] in
            list.append(2)
            return list
        }
        #expect(after == [1, 2])
    }
}
