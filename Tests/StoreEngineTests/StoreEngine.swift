import AsyncSignals
import Foundation
import Logging
import SQLiteStore
import StoreModel
import PostgresStore
import TestHarnesses
import TestKit
import Testing

/// Everything the agent asks of a store, whichever engine keeps it.
typealias AnyOrderStore = JobJournal & JobApplier & OrderReader & ChangeFeedSource

/// The two engines the store's behaviour tests run on, one body of tests for both.
enum StoreEngine: String, CaseIterable, CustomTestStringConvertible, Sendable {
    case sqlite
    case postgres

    var testDescription: String { rawValue }
}

/// Runs `body` with a fresh, empty store on `engine`: a new SQLite file, or a new database on the
/// test run's throwaway PostgreSQL cluster. `now` is the store's wall clock.
func withStore<T: Sendable>(
    _ engine: StoreEngine, account: String = "acme", now: @escaping @Sendable () -> Double = { 1_000 },
    _ body: (any AnyOrderStore) async throws -> T
) async throws -> T {
    switch engine {
    case .sqlite:
        let temporary = try TemporaryStore(now: now)
        return try await body(temporary.store)
    case .postgres:
        let server = try await PostgresServer.running()
        let database = try await server.database()
        return try await withPostgresStore(server: server, database: database, account: account, now: now, body)
    }
}

/// Runs `body` with a PostgreSQL store on `database` for `account`, its pool running beside it;
/// `changesCommitted` and `immediateApply` as ``PostgresOrderStore`` takes them.
func withPostgresStore<T: Sendable>(
    server: PostgresServer, database: String, account: String, now: @escaping @Sendable () -> Double = { 1_000 },
    changesCommitted: @escaping @Sendable (Int64) -> Void = { _ in }, immediateApply: ImmediateApply? = nil,
    _ body: (PostgresOrderStore) async throws -> T
) async throws -> T {
    var configuration = try PostgresStoreConfiguration(url: server.url(database: database), password: nil, account: account)
    // Under ThreadSanitizer's slowdown a connection to the shared cluster takes longer than 5 s.
    configuration.connectTimeout = TestTime.bound(configuration.connectTimeout)
    let store = PostgresOrderStore(
        configuration: configuration, logger: quietLogger, now: now, changesCommitted: changesCommitted,
        immediateApply: immediateApply)
    return try await withThrowingTaskGroup(of: Void.self) { group in
        group.addTask { await store.run() }
        defer { group.cancelAll() }
        try await store.prepare()
        return try await body(store)
    }
}

/// What an agent's ``PostgresNotifications`` heard on each channel, for tests that prove a commit
/// woke every agent's change feed or executor. Each handler is called once as the connection is
/// made, so both counts start at 1.
final class HeardNotifications: Sendable {
    typealias Counts = (changes: Int, jobs: Int)
    private let counts = Locked<Counts>((0, 0))
    private let woken = WakeSignal()

    fileprivate func heard(_ change: @Sendable (inout Counts) -> Void) {
        counts.withLock { change(&$0) }
        woken.signal()
    }

    /// Waits until `done` holds of the counts, or 30 s (scaled); returns them.
    @discardableResult
    func wait(until done: (Counts) -> Bool) async -> Counts {
        let clock = ContinuousClock()
        let deadline = clock.now.advanced(by: TestTime.bound(.seconds(30)))
        while !done(counts.withLock { $0 }), clock.now < deadline { await woken.wait(until: deadline, clock: clock) }
        return counts.withLock { $0 }
    }
}

/// Runs `body` while `store`'s notifications are listened to, once the listening connection is made.
func listening<T: Sendable>(to store: PostgresOrderStore, _ body: (HeardNotifications) async throws -> T) async throws -> T {
    let heard = HeardNotifications()
    let stopping = StopFlag()
    let notifications = PostgresNotifications(
        store: store, changes: { heard.heard { $0.changes += 1 } }, jobs: { heard.heard { $0.jobs += 1 } }, logger: quietLogger)
    let running = Task { await notifications.run(until: stopping) }
    defer {
        stopping.stop()
        running.cancel()
    }
    let listening = await heard.wait { $0.changes >= 1 && $0.jobs >= 1 }
    #expect(listening == (1, 1), "listening: each handler is called once as the connection is made")
    return try await body(heard)
}
