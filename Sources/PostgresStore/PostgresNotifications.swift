public import AsyncSignals
public import Logging
import PostgresNIO

/// Wakes this agent when another agent of its account commits (DESIGN §12): the change feed after
/// changes (`orderlive_changes`), the leader's executor after journaled jobs (`orderlive_jobs`).
/// `LISTEN` on a connection of its own; after every (re)connection each handler is called once,
/// because a notification sent while nobody listened is lost, and the log and the journal, not the
/// notifications, are the source of truth.
public struct PostgresNotifications: Sendable {
    let store: PostgresOrderStore
    let handlers: [String: @Sendable () -> Void]
    let logger: Logger

    /// Listens for `store`'s account: `changes` after committed changes, `jobs` after journaled jobs.
    public init(
        store: PostgresOrderStore, changes: @escaping @Sendable () -> Void, jobs: @escaping @Sendable () -> Void,
        logger: Logger
    ) {
        self.store = store
        self.handlers = [PostgresOrderStore.changeChannel: changes, PostgresOrderStore.jobChannel: jobs]
        self.logger = logger
    }

    /// Listens until `stopping` is set or the task is cancelled, reconnecting every second.
    public func run(until stopping: StopFlag) async {
        let logger = self.logger
        let prefix = store.account + ":"
        while !stopping.isStopped, !Task.isCancelled {
            do {
                let connection = try await PostgresConnection.connect(
                    configuration: try store.configuration.connection(), id: 2, logger: logger)
                defer { connection.discard() }
                let failover = store.configuration.failover
                await DatabaseSocket.configure(connection, failover: failover)
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for (channel, handler) in handlers {
                        group.addTask {
                            try await connection.listen(on: channel) { notifications in
                                // Listening now: what was committed before is read once.
                                handler()
                                for try await notification in notifications where notification.payload.hasPrefix(prefix) {
                                    handler()
                                }
                            }
                        }
                    }
                    group.addTask {
                        // A silently partitioned connection delivers nothing and reports nothing:
                        // it must answer a query every half `failover_s`, within half `failover_s`,
                        // or it is closed and made again (and each handler called once more on
                        // reconnecting): so no socket of it outlives a partition by more than
                        // `failover_s`.
                        let half = failover / 2
                        while true {
                            try await Task.sleep(for: half)
                            try await connection.answering(within: half) { connection in
                                try await connection.query("SELECT 1", logger: logger)
                            }
                        }
                    }
                    group.addTask {
                        // Stopping ends the listening (the sequences end with the connection).
                        while !stopping.isStopped { try await Task.sleep(for: .milliseconds(200)) }
                        throw CancellationError()
                    }
                    try await group.next()
                    group.cancelAll()
                }
            } catch {
                if stopping.isStopped || Task.isCancelled { return }
                logger.debug("listening for other agents' commits failed; reconnecting",
                             metadata: ["store.reason": "\(PostgresOrderStore.readable(error))"])
            }
            try? await Task.sleep(for: .seconds(1))
        }
    }
}
