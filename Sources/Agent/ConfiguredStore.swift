import Foundation
import Logging
import OrderStore
import PostgresStore

/// The store `store.backend` names, for the commands that read it from outside a running agent
/// (`orders`, `status`, `logout --wipe`): the SQLite file in the state directory, or this agent's
/// account in the shared PostgreSQL database.
public enum ConfiguredStore {
    /// Runs `body` with the store, or with nil when there is none yet (SQLite: no database file).
    /// With PostgreSQL the connection pool runs for `body`'s duration.
    public static func withReader<T: Sendable>(
        _ configuration: OrderliveConfiguration, logger: Logger,
        environment: [String: String] = ProcessInfo.processInfo.environment,
        _ body: @Sendable (any OrderReader) async throws -> T
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
