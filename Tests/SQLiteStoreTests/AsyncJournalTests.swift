import Foundation
@testable import SQLiteStore
import StoreModel
import TestHarnesses
import Testing

/// The stream journals through ``JobJournal`` from async code: behind a busy writer its callers wait
/// without holding a thread of the cooperative pool, however many they are (DESIGN §10: a blocking
/// wait there once deadlocked three callers on two cores until a gate opened).
@Suite(.timeLimit(.minutes(2))) struct AsyncJournalTests {
    @Test func moreJournalCallersThanCooperativeThreadsWaitWithoutHoldingOne() async throws {
        let temporary = try TemporaryStore()
        let store = temporary.store
        let (stream, continuation) = AsyncStream.makeStream(of: Int.self)
        store.groupCommit.observeQueue { continuation.yield($0) }
        var counts = stream.makeAsyncIterator()
        let (gate, held) = await GroupCommitTests.hold(store.groupCommit) { _ in }
        // The cooperative pool has one thread per core: three times as many callers would stop at the
        // second or third if each parked its thread.
        let callers = ProcessInfo.processInfo.activeProcessorCount * 3
        let journal: any JobJournal = store
        var tasks: [Task<Int, any Error>] = []
        for index in 0..<callers {
            tasks.append(Task {
                try await journal.journal([NewJob(kind: .fetch, orderID: "\(index)", source: "stream")], cursor: "event-\(index)",
                                          deadLetters: [])
            })
            #expect(await counts.next() == index + 1, "caller \(index) waits behind the held transaction")
        }
        // Every caller waits, and the pool still runs other work.
        let others = await withTaskGroup(of: Int.self) { group in
            for index in 0..<callers { group.addTask { await Task.yield(); return index } }
            return await group.reduce(0, +)
        }
        #expect(others == callers * (callers - 1) / 2)
        gate.signal()
        try await held.value
        for task in tasks { #expect(try await task.value == 1) }
        #expect(try store.pendingJobs(limit: 1_000).count == callers)
        #expect(try store.streamCursor().hasPrefix("event-"))
    }
}
