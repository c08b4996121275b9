import AsyncSignals
import Dispatch
import GRDB

/// The store's one writer (DESIGN §9): every write transaction of ``SQLiteOrderStore`` — a push
/// batch's acceptance, a stream batch's journal, the executor's applies, a full sync's pages, the
/// commands' repairs — is a *unit* handed to it. When it wakes it takes the units pending (as many
/// as its ``Grouping`` allows: with `durability: full`, all of them up to 64; with `normal`, where a
/// commit does not sync, one) and commits them in one transaction, each in a savepoint of its own,
/// in the order they came; then it tells each unit's caller, after the commit and never before.
///
/// - A lone unit commits at once, with no timer and no savepoint: exactly the transaction it had
///   before. A synchronous caller that finds the writer idle runs it on its own thread, as GRDB's
///   `writeWithoutTransaction` does; one that finds it busy waits for the next transaction.
/// - A unit that throws is rolled back to its savepoint and its caller gets the error; the units
///   beside it commit. Should SQLite roll the whole transaction back (a full disk), or the commit
///   fail, every unit of the transaction gets that error and nothing of any of them was written.
/// - Units run one after the other on GRDB's serialized writer, so what a unit reads inside the
///   transaction includes what the units before it wrote (the journal's depth for
///   ``ImmediateApply``, the change log's head for numbering): the effect is that of the units
///   committed one by one in the same order, with one commit (one `fsync` with `durability: full`)
///   instead of several.
///
/// Units are bounded already (a push batch by ``PushJournal``'s 512 submissions and the ingest
/// body limit, a stream batch by the parser's batch, the executor's by its head read), so a
/// transaction holds at most its limit of bounded units.
public final class GroupCommit: Sendable {
    /// One caller's writes: `run` executes them inside the shared transaction (in a savepoint unless
    /// alone) and returns whether they failed and what to tell the caller once the transaction has
    /// ended (nil: committed; else the error that ended it); `refuse` tells the caller that its
    /// writes never ran.
    struct Unit: Sendable {
        let run: @Sendable (Database, _ alone: Bool) -> (failed: Bool, finish: @Sendable ((any Error)?) -> Void)
        let refuse: @Sendable (any Error) -> Void
    }

    private struct State {
        var pending: [Unit] = []
        /// A transaction is running or scheduled on the writer: new units wait for the next one.
        var draining = false
        var transactions = 0
        var units = 0
    }

    /// When units share a transaction.
    let grouping: Grouping
    private let writer: any DatabaseWriter
    private let state = Locked(State())
    /// Hears how many units are pending after one is queued behind a running transaction (tests).
    private let queueObserver = Locked<(@Sendable (Int) -> Void)?>(nil)

    init(_ writer: any DatabaseWriter, grouping: Grouping = .always(limit: 64)) {
        self.writer = writer
        self.grouping = grouping
    }

    /// Calls `observer` with the number of pending units each time one is queued behind a running
    /// transaction (tests wait on it instead of sleeping).
    func observeQueue(_ observer: @escaping @Sendable (Int) -> Void) {
        queueObserver.withLock { $0 = observer }
    }

    private func queued() {
        guard let observer = queueObserver.withLock({ $0 }) else { return }
        observer(state.withLock { $0.pending.count })
    }

    /// Units waiting for the next transaction.
    var pendingCount: Int { state.withLock { $0.pending.count } }

    /// Transactions committed or tried, and the units they held (the ratio is the grouping).
    var statistics: (transactions: Int, units: Int) {
        state.withLock { ($0.transactions, $0.units) }
    }

    /// Runs `body` in the next transaction and returns its result once that has committed, blocking
    /// the calling thread (the executor's own thread, a command's). It must not be called from
    /// inside a unit.
    func write<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) throws -> T {
        let leads = state.withLock { state -> Bool in
            if state.draining { return false }
            state.draining = true
            return true
        }
        if leads {
            // Idle: this thread runs the transaction, its own writes first, then whatever else
            // arrived before it began; nothing is queued or signalled for its own.
            return try writer.writeWithoutTransaction { db in try lead(db, body) }
        }
        let result = Locked<Result<T, any Error>?>(nil)
        let done = DispatchSemaphore(value: 0)
        let unit = Self.unit(body) { outcome in
            result.withLock { $0 = outcome }
            done.signal()
        }
        // The writer may have gone idle since: then this unit schedules the next transaction.
        enqueue(unit)
        done.wait()
        guard let outcome = result.withLock({ $0 }) else {
            throw DatabaseError(resultCode: .SQLITE_MISUSE, message: "the store's writer ended a transaction without an outcome")
        }
        return try outcome.get()
    }

    /// Runs `body` in the next transaction and returns its result once that has committed.
    func write<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            enqueue(Self.unit(body) { continuation.resume(with: $0) })
        }
    }

    /// Queues `unit` for the next transaction, scheduling one on the writer when none is pending.
    private func enqueue(_ unit: Unit) {
        let schedules = state.withLock { state -> Bool in
            state.pending.append(unit)
            if state.draining { return false }
            state.draining = true
            return true
        }
        if schedules {
            writer.asyncWriteWithoutTransaction { db in self.drain(db) }
        } else {
            queued()
        }
    }

    /// The transaction a synchronous caller that found the writer idle runs on its own thread.
    private func lead<T>(_ db: Database, _ body: (Database) throws -> T) throws -> T {
        let others = take(besides: 1)
        var own: Result<T, any Error>?
        let ending = Self.commit(others, in: db, leading: true) { alone in
            let result = Self.run(body, alone: alone, in: db)
            own = result
            if case .failure = result { return true }
            return false
        }
        scheduleNext()
        switch own {
        case .failure(let error)?: throw error
        case .success(let value)?:
            if let ending { throw ending }
            return value
        case nil:
            throw ending ?? DatabaseError(resultCode: .SQLITE_MISUSE, message: "the store's writer did not run a write")
        }
    }

    /// One transaction of the pending units; schedules the next while more wait.
    private func drain(_ db: Database) {
        _ = Self.commit(take(besides: 0), in: db, leading: false) { _ in false }
        scheduleNext()
    }

    /// The pending units the next transaction takes beside `leading` of a caller's own.
    private func take(besides leading: Int) -> [Unit] {
        state.withLock { state -> [Unit] in
            let taken = min(state.pending.count, max(0, grouping.limit - leading))
            let units = Array(state.pending.prefix(taken))
            state.pending.removeFirst(taken)
            state.transactions &+= 1
            state.units &+= taken + leading
            return units
        }
    }

    /// After a transaction: the next is scheduled while units wait, else the writer is idle.
    private func scheduleNext() {
        let more = state.withLock { state -> Bool in
            if state.pending.isEmpty {
                state.draining = false
                return false
            }
            return true
        }
        if more { writer.asyncWriteWithoutTransaction { db in self.drain(db) } }
    }

    /// Runs `first` when `leading` (a leading caller's own writes, given whether they are alone;
    /// true when they failed) and `units` in one transaction, tells each unit how it ended, and
    /// returns how the transaction ended: nil when it committed, else the error (a failed `BEGIN`,
    /// SQLite's own rollback, a failed `COMMIT`) that every write of it shares.
    private static func commit(
        _ units: [Unit], in db: Database, leading: Bool, first: (_ alone: Bool) -> Bool
    ) -> (any Error)? {
        do {
            try db.cachedStatement(sql: "BEGIN IMMEDIATE TRANSACTION").execute()
        } catch {
            for unit in units { unit.refuse(error) }
            return error
        }
        let alone = units.count + (leading ? 1 : 0) == 1
        var finishes: [@Sendable ((any Error)?) -> Void] = []
        finishes.reserveCapacity(units.count)
        var succeeded = false
        if leading, !first(alone) { succeeded = true }
        for unit in units {
            let (failed, finish) = unit.run(db, alone)
            finishes.append(finish)
            if !failed { succeeded = true }
        }
        var ending: (any Error)?
        if !db.isInsideTransaction {
            // SQLite rolled everything back (a full disk, an I/O error): nothing of any unit is written.
            ending = Database.transactionAborted
        } else if !succeeded {
            // Nothing to keep (a lone unit that failed is not committed half done).
            do { try db.rollback() } catch {}
        } else {
            do {
                try db.cachedStatement(sql: "COMMIT TRANSACTION").execute()
            } catch {
                ending = error
                do { try db.rollback() } catch {}
            }
        }
        for finish in finishes { finish(ending) }
        return ending
    }

    /// A unit of `body` whose outcome goes to `deliver` once its transaction has ended.
    private static func unit<T: Sendable>(
        _ body: @escaping @Sendable (Database) throws -> T, deliver: @escaping @Sendable (Result<T, any Error>) -> Void
    ) -> Unit {
        Unit(
            run: { db, alone in
                let result = run(body, alone: alone, in: db)
                let failed = if case .failure = result { true } else { false }
                // A unit's own error is the one its caller can act on, even when the transaction ended with another.
                return (failed, { ending in deliver(failed ? result : ending.map { .failure($0) } ?? result) })
            },
            refuse: { deliver(.failure($0)) })
    }

    /// One caller's writes inside the shared transaction: in a savepoint of their own unless alone.
    private static func run<T>(_ body: (Database) throws -> T, alone: Bool, in db: Database) -> Result<T, any Error> {
        Result { alone ? try body(db) : try db.inCachedSavepoint { try body(db) } }
    }
}
