import Dispatch
import Foundation
import GRDB
@testable import SQLiteStore
import StoreModel
import Synchronization
import TestHarnesses
import Testing

/// The store's one writer (issue 39, item 1): what is pending when a transaction begins commits in
/// it, each unit all-or-nothing, none told before the commit; on a real SQLite database in WAL mode.
@Suite(.timeLimit(.minutes(3))) struct GroupCommitTests {
    struct Refused: Error {}

    /// A database with one table, and a group commit over it that reports every unit queued.
    final class Bench: Sendable {
        let directory: String
        let pool: DatabasePool
        let commit: GroupCommit
        let queuedCounts: AsyncStream<Int>

        init(grouping: GroupCommit.Grouping = .always(limit: 64)) throws {
            directory = NSTemporaryDirectory() + "orderlive-group-commit-\(UUID().uuidString)"
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            pool = try DatabasePool(path: directory + "/test.sqlite")
            try pool.write { try $0.execute(sql: "CREATE TABLE item (id INTEGER PRIMARY KEY, name TEXT NOT NULL)") }
            let (stream, continuation) = AsyncStream.makeStream(of: Int.self)
            queuedCounts = stream
            commit = GroupCommit(pool, grouping: grouping)
            commit.observeQueue { continuation.yield($0) }
        }

        deinit { try? FileManager.default.removeItem(atPath: directory) }

        func names() throws -> [String] {
            try pool.read { try String.fetchAll($0, sql: "SELECT name FROM item ORDER BY id") }
        }

        /// Starts a transaction that writes `held` and stays open until the returned gate is signalled.
        func hold() async -> (gate: DispatchSemaphore, done: Task<Void, any Error>) {
            await GroupCommitTests.hold(commit) { db in try db.execute(sql: "INSERT INTO item (name) VALUES ('held')") }
        }

        /// Queues `body` behind the held transaction and returns once it waits there.
        func queue<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async -> Task<T, any Error> {
            var counts = queuedCounts.makeAsyncIterator()
            let before = commit.pendingCount
            let task = Task { try await commit.write(body) }
            while let count = await counts.next(), count <= before {}
            return task
        }
    }

    /// Starts a transaction of `commit` on another thread that runs `body` and stays open until the
    /// returned gate is signalled; returns once it runs, with a task that ends with it.
    static func hold(
        _ commit: GroupCommit, _ body: @escaping @Sendable (Database) throws -> Void
    ) async -> (gate: DispatchSemaphore, done: Task<Void, any Error>) {
        let gate = DispatchSemaphore(value: 0)
        let (entered, enteredContinuation) = AsyncStream.makeStream(of: Void.self)
        let (done, doneContinuation) = AsyncStream.makeStream(of: (any Error)?.self)
        Self.onThread {
            do {
                try blocking(commit) { db in
                    try body(db)
                    enteredContinuation.yield()
                    gate.wait()
                }
                doneContinuation.yield(nil)
            } catch {
                doneContinuation.yield(error)
            }
        }
        for await _ in entered { break }
        let task = Task {
            for await result in done { if let result { throw result } else { return } }
        }
        return (gate, task)
    }

    /// Runs `body` on a thread of its own, as the executor's: a blocked Dispatch worker would starve
    /// the writer's own queue of threads while other tests run beside it.
    static func onThread(_ body: @escaping @Sendable () -> Void) {
        let thread = Thread(block: body)
        thread.start()
    }

    /// The blocking `write`, as a thread outside Swift concurrency calls it.
    static func blocking<T: Sendable>(_ commit: GroupCommit, _ body: @escaping @Sendable (Database) throws -> T) throws -> T {
        try commit.write(body)
    }

    static func insert(_ name: String) -> @Sendable (Database) throws -> String {
        { db in
            try db.execute(sql: "INSERT INTO item (name) VALUES (?)", arguments: [name])
            return name
        }
    }

    @Test func unitsThatQueueBehindATransactionCommitTogetherInTheOrderTheyCame() async throws {
        let bench = try Bench()
        let (gate, held) = await bench.hold()
        var tasks: [Task<String, any Error>] = []
        for name in ["a", "b", "c", "d"] { tasks.append(await bench.queue(Self.insert(name))) }
        #expect(bench.commit.pendingCount == 4)
        #expect(try bench.names().isEmpty, "nothing is visible before the held transaction commits")
        gate.signal()
        try await held.value
        for (task, name) in zip(tasks, ["a", "b", "c", "d"]) {
            #expect(try await task.value == name)
            // Told only after the commit: another connection sees the row.
            #expect(try bench.names().contains(name))
        }
        #expect(try bench.names() == ["held", "a", "b", "c", "d"])
        let statistics = bench.commit.statistics
        #expect(statistics.transactions == 2, "the held transaction, then one for the four that waited")
        #expect(statistics.units == 5)
    }

    @Test func aUnitThatThrowsIsUndoneAloneAndTheUnitsBesideItCommit() async throws {
        let bench = try Bench()
        let (gate, held) = await bench.hold()
        let first = await bench.queue(Self.insert("a"))
        let refused = await bench.queue { db -> String in
            try db.execute(sql: "INSERT INTO item (name) VALUES ('undone')")
            throw Refused()
        }
        let last = await bench.queue(Self.insert("c"))
        gate.signal()
        try await held.value
        #expect(try await first.value == "a")
        await #expect(throws: Refused.self) { try await refused.value }
        #expect(try await last.value == "c")
        #expect(try bench.names() == ["held", "a", "c"])
        #expect(bench.commit.statistics.transactions == 2)
    }

    @Test func whenSQLiteEndsTheTransactionNoUnitOfItIsWrittenAndEveryOneIsTold() async throws {
        let bench = try Bench()
        let (gate, held) = await bench.hold()
        let before = await bench.queue(Self.insert("a"))
        // As SQLite does by itself after a full disk or an I/O error: the whole transaction is gone.
        let ending = await bench.queue { db -> String in
            try db.execute(sql: "INSERT INTO item (name) VALUES ('b')")
            try db.execute(sql: "ROLLBACK")
            return "b"
        }
        let after = await bench.queue(Self.insert("c"))
        gate.signal()
        try await held.value
        await #expect(throws: DatabaseError.self) { try await before.value }
        await #expect(throws: DatabaseError.self) { try await ending.value }
        await #expect(throws: DatabaseError.self) { try await after.value }
        #expect(try bench.names() == ["held"])
        // The writer goes on: the next unit commits.
        #expect(try await bench.commit.write(Self.insert("next")) == "next")
        #expect(try bench.names() == ["held", "next"])
    }

    @Test func aLoneUnitIsItsOwnTransactionAndIsUndoneWholeWhenItThrows() async throws {
        let bench = try Bench()
        #expect(try Self.blocking(bench.commit, Self.insert("sync")) == "sync")
        #expect(try await bench.commit.write(Self.insert("async")) == "async")
        #expect(throws: Refused.self) {
            try Self.blocking(bench.commit) { db -> Void in
                try db.execute(sql: "INSERT INTO item (name) VALUES ('undone')")
                throw Refused()
            }
        }
        #expect(try bench.names() == ["sync", "async"])
        let statistics = bench.commit.statistics
        #expect(statistics.transactions == 3 && statistics.units == 3)
    }

    @Test func aTransactionTakesAtMostItsLimitAndTheRestFollowInOrder() async throws {
        let bench = try Bench(grouping: .always(limit: 2))
        let (gate, held) = await bench.hold()
        var tasks: [Task<String, any Error>] = []
        for name in ["a", "b", "c", "d", "e"] { tasks.append(await bench.queue(Self.insert(name))) }
        gate.signal()
        try await held.value
        for task in tasks { _ = try await task.value }
        #expect(try bench.names() == ["held", "a", "b", "c", "d", "e"])
        let statistics = bench.commit.statistics
        #expect(statistics.transactions == 4, "the held one, then a+b, c+d, e")
        #expect(statistics.units == 6)
    }

    @Test func aSynchronousCallerQueuedBehindATransactionIsAnsweredAfterItsOwnCommit() async throws {
        let bench = try Bench()
        let (gate, held) = await bench.hold()
        var counts = bench.queuedCounts.makeAsyncIterator()
        let (answered, answeredContinuation) = AsyncStream.makeStream(of: Result<String, any Error>.self)
        Self.onThread {
            answeredContinuation.yield(Result { try Self.blocking(bench.commit, Self.insert("blocking")) })
        }
        _ = await counts.next()
        let queued = await bench.queue(Self.insert("async"))
        gate.signal()
        try await held.value
        var iterator = answered.makeAsyncIterator()
        #expect(try await iterator.next()?.get() == "blocking")
        #expect(try await queued.value == "async")
        #expect(try bench.names() == ["held", "blocking", "async"])
        #expect(bench.commit.statistics.transactions == 2)
    }

    @Test func aPushAndAStreamBatchThatWaitTogetherShareOneTransactionAsIfCommittedOneByOne() async throws {
        let temporary = try TemporaryStore(immediateApply: ImmediateApply(), grouping: .always(limit: 64))
        let store = temporary.store
        let (stream, continuation) = AsyncStream.makeStream(of: Int.self)
        store.groupCommit.observeQueue { continuation.yield($0) }
        var counts = stream.makeAsyncIterator()
        let head = try store.changeHead()
        let (gate, held) = await Self.hold(store.groupCommit) { _ in }
        let first = try order(1, version: 1)
        let push = Task {
            await store.accept(
                [IdempotentSubmission(requestKey: "msg_1", parts: [
                    .init(key: "n-1", jobs: [NewJob(kind: .upsert, orderID: "1", order: first, source: "push")]),
                ], response: "{}")],
                policy: SubmissionPolicy(dedupeSince: 0, highWaterJobs: 100))
        }
        #expect(await counts.next() == 1)
        let second = try order(2, version: 1)
        let (journaled, journaledContinuation) = AsyncStream.makeStream(of: Result<Int, any Error>.self)
        Self.onThread {
            journaledContinuation.yield(Result {
                try store.journal([NewJob(kind: .upsert, orderID: "2", order: second, source: "stream")], cursor: "event-9")
            })
        }
        #expect(await counts.next() == 2)
        gate.signal()
        try await held.value
        #expect(await push.value == [.accepted(jobs: 1, duplicateParts: 0, applied: 1)])
        var answers = journaled.makeAsyncIterator()
        #expect(try await answers.next()?.get() == 0, "applied at once: the push before it left the journal empty")
        let statistics = store.groupCommit.statistics
        #expect(statistics.transactions == 2 && statistics.units == 3, "the held transaction, then the push with the batch")
        #expect(try store.streamCursor() == "event-9")
        #expect(try store.orders().map(\.id).sorted() == ["1", "2"])
        guard case .changes(let changes) = try store.changes(after: head, limit: 10) else {
            Issue.record("the change log cannot be read from \(head)")
            return
        }
        #expect(changes.map(\.seq) == [head + 1, head + 2], "numbered on from each other, with no gap")
        #expect(changes.map(\.orderID) == ["1", "2"], "in the order the units came")
    }

    @Test func theStandardGroupingSharesACommitOnlyWhereEveryCommitSyncs() async throws {
        for durability in StoreDurability.allCases {
            let directory = NSTemporaryDirectory() + "orderlive-group-durability-\(UUID().uuidString)"
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(atPath: directory) }
            let store = try SQLiteOrderStore(path: directory + "/orderlive.sqlite", durability: durability)
            let (stream, continuation) = AsyncStream.makeStream(of: Int.self)
            store.groupCommit.observeQueue { continuation.yield($0) }
            var counts = stream.makeAsyncIterator()
            let (gate, held) = await Self.hold(store.groupCommit) { _ in }
            // Pushes: their `accept` waits without holding a thread (a blocking caller would take one
            // of the two cooperative threads this machine has).
            var tasks: [Task<[SubmissionOutcome], Never>] = []
            for index in 0..<3 {
                let job = NewJob(kind: .fetch, orderID: "\(index)", source: "test")
                let submission = IdempotentSubmission(requestKey: "msg-\(index)", parts: [.init(key: nil, jobs: [job])], response: "{}")
                tasks.append(Task { await store.accept([submission], policy: SubmissionPolicy(dedupeSince: 0, highWaterJobs: 100)) })
                #expect(await counts.next() == index + 1)
            }
            gate.signal()
            try await held.value
            for task in tasks { #expect(await task.value == [.accepted(jobs: 1, duplicateParts: 0)]) }
            let statistics = store.writeStatistics
            let expected = durability == .full ? 2 : 4
            #expect(statistics.transactions == expected && statistics.units == 4,
                    "\(durability): \(statistics) (full shares one commit among the three that waited)")
        }
    }

    @Test func aGroupingLimitBelowOneIsOne() {
        #expect(GroupCommit.Grouping.never.limit == 1)
        #expect(GroupCommit.Grouping.always(limit: 0).limit == 1)
        #expect(GroupCommit.Grouping.standard(for: .full) == .always(limit: 64))
        #expect(GroupCommit.Grouping.standard(for: .normal) == .never)
    }
}
