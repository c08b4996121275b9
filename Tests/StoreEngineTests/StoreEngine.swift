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
