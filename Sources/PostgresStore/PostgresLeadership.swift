public import AsyncSignals
import CheckedInput
import Foundation
public import Logging
import PostgresNIO

/// One leader per account (DESIGN §12). The leader holds a session-level advisory lock on a
/// connection of its own, so the lock goes with the connection: a leader that dies (its socket
/// closes) or freezes (its session, never idle while it lives, passes `idle_session_timeout` =
/// `failover_s` and the server ends it) releases it. Taking over increments the account's fencing
/// epoch, which every apply and cursor advance checks (``PostgresOrderStore/fence(epoch:)``); a
/// frozen leader's open transaction is ended by `idle_in_transaction_session_timeout`, so the
/// takeover never waits on it and its late commit is refused. Followers try for the lock several
/// times per `failover_s` (at least once a second).
public final class PostgresLeadership: Sendable {
    /// What this agent is for its account.
    public enum Role: String, Sendable, Hashable {
        /// It streams and applies.
        case leader
        /// It ingests pushes and serves the API; it takes over when the leader is gone.
        case follower
    }

    /// The cluster as this agent sees it, for `/readyz`, `status` and `/metrics`.
    public struct Status: Sendable, Hashable {
        /// This agent's role.
        public var role = Role.follower
        /// The account's fencing epoch, when known.
        public var epoch: Int64?
        /// The leader's name (`host:pid`), when known.
        public var leader: String?
        /// How many times this agent took over.
        public var takeovers = 0
        /// "ok", or why the database cannot be used for leadership now.
        public var database = "connecting"
    }

    let store: PostgresOrderStore
    /// This agent's name in the leadership row (`host:pid`).
    public let name: String
    var failover: Duration { store.configuration.failover }
    let logger: Logger
    let status = Locked(Status())
    let changed: @Sendable (Status) -> Void

    /// Leadership of `store`'s account, as `name`, taken over within the configuration's
    /// `failover`. `changed` hears every change of ``currentStatus``.
    public init(
        store: PostgresOrderStore, name: String, logger: Logger, changed: @escaping @Sendable (Status) -> Void = { _ in }
    ) {
        self.store = store
        self.name = name
        self.logger = logger
        self.changed = changed
    }

    /// The cluster as this agent sees it now.
    public var currentStatus: Status { status.withLock { $0 } }

    /// How often a follower tries for the lock and a leader checks its connection.
    var interval: Duration { min(.seconds(1), failover / 4) }

    /// Takes part until `stopping` is set (then leadership is given up at once, by closing the
    /// connection) or the task is cancelled. `lead` runs while this agent leads and is cancelled
    /// the moment its connection fails; when `lead` returns by itself, leadership is given up.
    ///
    /// While `winding` says the agent is already winding down (its shutdown began, and other services
    /// stop before this one), a failure of the leadership connection is logged as a notice: the
    /// leadership is about to be given up anyway, and a clean stop logs no error.
    public func run(
        until stopping: StopFlag, winding: @escaping @Sendable () -> Bool = { false },
        lead: @escaping @Sendable () async -> Void
    ) async {
        while !stopping.isStopped, !Task.isCancelled {
            do {
                if !store.prepared.withLock({ $0 }) { try await store.prepare() }
                let configuration = try leadershipConnection()
                let connection = try await PostgresConnection.connect(
                    configuration: configuration, id: 1, logger: logger)
                // Closed without waiting: closing a connection the server ended may not return.
                defer { connection.discard() }
                await DatabaseSocket.configure(connection, failover: failover)
                update { $0.database = "ok" }
                try await take(part: connection, until: stopping, lead: lead)
            } catch {
                if stopping.isStopped || Task.isCancelled { break }
                let reason = "\(PostgresOrderStore.readable(error))"
                if currentStatus.role == .leader || currentStatus.database != reason {
                    logger.log(level: winding() ? .notice : .error, "the database cannot be used for leadership; retrying",
                               metadata: ["store.reason": "\(reason)"])
                }
                update {
                    $0.role = .follower
                    $0.database = reason
                }
            }
            guard !stopping.isStopped else { break }
            try? await Task.sleep(for: interval)
        }
        update { $0.role = .follower }
    }

    private func take(
        part connection: PostgresConnection, until stopping: StopFlag, lead: @escaping @Sendable () async -> Void
    ) async throws {
        let account = store.account
        let logger = self.logger
        while !stopping.isStopped, !Task.isCancelled {
            // Every round trip on this connection has the deadline `failover_s` (a silent partition
            // hangs a query; it does not fail it): past it the connection is closed and made again.
            let locked = try await connection.answering(within: failover) { connection in
                var locked = false
                for try await got in try await connection.query(
                    "SELECT pg_try_advisory_lock(hashtextextended(\(account), 2))", logger: logger).decode(Bool.self) {
                    locked = got
                }
                return locked
            }
            guard locked else {
                try await observe(on: connection)
                try await Task.sleep(for: interval)
                continue
            }
            let epoch = try await takeOver(on: connection)
            store.fence(epoch: epoch)
            update {
                $0.role = .leader
                $0.epoch = epoch
                $0.leader = name
                $0.takeovers += 1
            }
            logger.notice("this agent leads its account now: it streams and applies", metadata: [
                "store.account": "\(account)", "cluster.epoch": "\(epoch)", "cluster.leader": "\(name)",
            ])
            let ended: LeadEnd = try await withThrowingTaskGroup(of: LeadEnd.self) { group in
                group.addTask {
                    await lead()
                    return .returned
                }
                group.addTask {
                    // The connection must answer within the interval, every interval.
                    while true {
                        try await Task.sleep(for: self.interval)
                        do {
                            try await self.probe(connection)
                        } catch {
                            self.logger.warning("the leadership connection failed: stopping the stream and the executor",
                                                metadata: ["store.reason": "\(PostgresOrderStore.readable(error))"])
                            throw error
                        }
                    }
                }
                defer { group.cancelAll() }
                guard let first = try await group.next() else { return .returned }
                return first
            }
            if ended == .returned {
                // Graceful shutdown: give the account to a follower now rather than at our death.
                _ = try? await connection.answering(within: failover) { connection in
                    try await connection.query("SELECT pg_advisory_unlock(hashtextextended(\(account), 2))", logger: logger)
                }
                update { $0.role = .follower }
                logger.notice("this agent no longer leads its account", metadata: ["store.account": "\(account)"])
                return
            }
        }
    }

    private enum LeadEnd: Sendable {
        case returned
    }

    /// Increments the epoch and names this agent leader, in one statement: returns the new epoch.
    private func takeOver(on connection: PostgresConnection) async throws -> Int64 {
        let (account, name, now, logger) = (store.account, name, store.now(), logger)
        // The update waits for a deposed leader's open transaction, which the server ends after
        // `failover_s` (`idle_in_transaction_session_timeout`): twice that before giving up.
        return try await connection.answering(within: failover * 2) { connection in
            var epoch: Int64?
            for try await value in try await connection.query("""
                INSERT INTO orderlive_leadership (account, epoch, leader, since) VALUES (\(account), 1, \(name), \(now))
                ON CONFLICT (account) DO UPDATE SET epoch = orderlive_leadership.epoch + 1, leader = excluded.leader,
                    since = excluded.since
                RETURNING epoch
                """, logger: logger).decode(Int64.self) {
                epoch = value
            }
            guard let epoch else { throw PostgresStoreError("taking over returned no epoch") }
            return epoch
        }
    }

    /// A follower's view of who leads.
    private func observe(on connection: PostgresConnection) async throws {
        let (account, logger) = (store.account, logger)
        let seen = try await connection.answering(within: failover) { connection -> (Int64, String)? in
            var seen: (Int64, String)?
            for try await row in try await connection.query(
                "SELECT epoch, leader FROM orderlive_leadership WHERE account = \(account)", logger: logger)
                .decode((Int64, String).self) {
                seen = row
            }
            return seen
        }
        guard let (epoch, leader) = seen else { return }
        update {
            $0.role = .follower
            $0.epoch = epoch
            $0.leader = leader
        }
    }

    /// Fails unless the connection answers within the interval (a cut network hangs, it does not
    /// fail); the connection is closed then.
    private func probe(_ connection: PostgresConnection) async throws {
        let (interval, logger) = (self.interval, self.logger)
        do {
            try await connection.answering(within: interval) { connection in
                try await connection.query("SELECT 1", logger: logger)
            }
        } catch is DatabaseTimeout {
            throw PostgresStoreError("the leadership connection did not answer within \(interval)")
        }
    }

    /// The leadership connection: like the pool's, and ended by the server when idle longer than
    /// `failover_s` (a frozen leader), with server-side keepalives that notice a dead peer.
    private func leadershipConnection() throws -> PostgresConnection.Configuration {
        var configuration = try store.configuration.connection()
        let seconds = max(1, failover.components.seconds / 3)
        configuration.options.additionalStartupParameters += [
            ("idle_session_timeout", "\(max(1, Checked.milliseconds(of: failover)))"),
            ("tcp_keepalives_idle", "\(seconds)"), ("tcp_keepalives_interval", "\(seconds)"),
            ("tcp_keepalives_count", "3"),
        ]
        return configuration
    }

    private func update(_ change: (inout Status) -> Void) {
        let changed: Status? = status.withLock { status in
            let before = status
            change(&status)
            return status == before ? nil : status
        }
        if let changed { self.changed(changed) }
    }
}
