import AsyncSignals
import CheckedInput
public import Foundation
public import Logging
import SQLiteStore
public import StoreModel
import PostgresStore
import OrderSync

/// The store `store.backend` names — the SQLite file in the state directory, or this agent's account
/// in the shared PostgreSQL database — for the running agent and for the commands that read it from
/// outside one (`orders`, `status`, `logout --wipe`). The one place the backend is switched on.
public enum ConfiguredStore {
    /// Opens the agent's store. Its write health is logged once per change, never per failed write
    /// (DESIGN §10), and each change signals `healthWake` (the ``StoreHealthProbe``); every commit that appended changes signals `feedWake`; on SQLite, whole-order
    /// jobs that find the journal empty are applied as they are committed and counted as completed.
    static func openForAgent(
        _ configuration: OrderliveConfiguration, environment: [String: String], metrics: AgentMetrics,
        feedWake: WakeSignal, webhookWake: WakeSignal, healthWake: WakeSignal, logger: Logger
    ) throws(AgentStartError) -> (store: any OrderStoreEngine, postgres: PostgresOrderStore?, lock: StateLock?) {
        let healthChanged: @Sendable (StoreWriteHealth) -> Void = { health in
            healthWake.signal()
            if let reason = health.reason {
                logger.error("the order store cannot be written; pushes get 503 and the stream waits",
                             metadata: ["store.reason": "\(reason)"])
            } else {
                logger.notice("the order store can be written again")
            }
        }
        switch configuration.store.backend {
        case .sqlite:
            let directory = StateDirectory(configuration.store.stateDirectory)
            // Held for the agent's life: `orderlive store restore` refuses to swap the store under it.
            let lock: StateLock?
            do {
                try FileManager.default.createDirectory(atPath: directory.path, withIntermediateDirectories: true)
                lock = try StateLock.take(directory, exclusive: false)
            } catch {
                throw AgentStartError("cannot use the state directory \(directory.path): \(error)")
            }
            guard let lock else {
                throw AgentStartError("`orderlive store restore` is replacing the store in \(directory.path); "
                    + "start the agent again when it has finished")
            }
            do {
                // A push never waits past `ingest.read_timeout_ms` for the journal (DESIGN §10): nor
                // does a write wait longer than that for another process's lock.
                let store = try directory.openStore(
                    durability: configuration.store.durability,
                    busyTimeout: min(5, Checked.seconds(of: configuration.ingest.readTimeout)), healthChanged: healthChanged,
                    changesCommitted: { _ in
                        feedWake.signal()
                        webhookWake.signal()
                    },
                    immediateApply: ImmediateApply { kind, count in metrics.record(kind, .completed, count: count) })
                return (store, nil, lock)
            } catch {
                throw AgentStartError("cannot open the order database in \(configuration.store.stateDirectory): \(error)")
            }
        case .postgres:
            let engine = PostgresOrderStore(
                configuration: try AgentBuilder.postgresSettings(configuration, environment: environment), logger: logger,
                healthChanged: healthChanged, changesCommitted: { _ in
                    feedWake.signal()
                    webhookWake.signal()
                },
                immediateApply: ImmediateApply { kind, count in metrics.record(kind, .completed, count: count) })
            return (engine, engine, nil)
        }
    }

    /// Runs `body` with the store, or with nil when there is none yet (SQLite: no database file).
    /// With PostgreSQL the connection pool runs for `body`'s duration.
    public static func withReader<T: Sendable>(
        _ configuration: OrderliveConfiguration, logger: Logger,
        environment: [String: String] = ProcessInfo.processInfo.environment,
        _ body: @Sendable (any OrderReader) async throws -> T
    ) async throws -> T? {
        try await withRepairs(configuration, logger: logger, environment: environment) { try await body($0) }
    }

    /// ``withReader(_:logger:environment:_:)`` with the operator's repairs too (`dead-letters drop`).
    public static func withRepairs<T: Sendable>(
        _ configuration: OrderliveConfiguration, logger: Logger,
        environment: [String: String] = ProcessInfo.processInfo.environment,
        _ body: @Sendable (any OrderReader & DeadLetterRepair) async throws -> T
    ) async throws -> T? {
        switch configuration.store.backend {
        case .sqlite:
            guard let store = try StateDirectory(configuration.store.stateDirectory).openExistingStore() else { return nil }
            return try await body(store)
        case .postgres:
            let store = try postgres(configuration, logger: logger, environment: environment)
            return try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { await store.run() }
                defer { group.cancelAll() }
                return try await body(store)
            }
        }
    }

    /// Runs `body` with the configured store's webhook endpoints: the SQLite file (created when there is
    /// none yet), or this account in PostgreSQL (migrated first, its pool running for `body`).
    public static func withWebhooks<T: Sendable>(
        _ configuration: OrderliveConfiguration, logger: Logger,
        environment: [String: String] = ProcessInfo.processInfo.environment,
        _ body: @Sendable (any WebhookOutbox & ChangeFeedSource) async throws -> T
    ) async throws -> T {
        switch configuration.store.backend {
        case .sqlite:
            let directory = StateDirectory(configuration.store.stateDirectory)
            try FileManager.default.createDirectory(atPath: directory.path, withIntermediateDirectories: true)
            return try await body(try directory.openStore())
        case .postgres:
            let store = try postgres(configuration, logger: logger, environment: environment)
            return try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { await store.run() }
                defer { group.cancelAll() }
                try await store.prepare()
                return try await body(store)
            }
        }
    }

    /// Deletes the stored orders: the SQLite files, or every row of this account in PostgreSQL.
    /// Returns what went, in words.
    public static func wipe(
        _ configuration: OrderliveConfiguration, logger: Logger,
        environment: [String: String] = ProcessInfo.processInfo.environment
    ) async throws -> [String] {
        switch configuration.store.backend {
        case .sqlite:
            return try StateDirectory(configuration.store.stateDirectory).wipeOrders()
        case .postgres:
            let store = try postgres(configuration, logger: logger, environment: environment)
            return try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { await store.run() }
                defer { group.cancelAll() }
                let removed = try await store.wipeAccount()
                return removed == 0 ? [] : ["\(removed) rows of account \(store.account) in PostgreSQL"]
            }
        }
    }

    private static func postgres(
        _ configuration: OrderliveConfiguration, logger: Logger, environment: [String: String]
    ) throws -> PostgresOrderStore {
        PostgresOrderStore(
            configuration: try AgentBuilder.postgresSettings(configuration, environment: environment), logger: logger)
    }
}
