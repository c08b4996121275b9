import AsyncSignals
public import Foundation
public import Logging
public import StoreModel
import PostgresNIO

/// The PostgreSQL engine of the store. ``run()`` must be running (it runs the connection pool) for
/// anything else to answer; ``prepare()`` migrates the schema and opens this account's rows.
public final class PostgresOrderStore: Sendable, WriteProbe {
    /// This agent's partition of the database.
    public let account: String
    let client: PostgresClient
    let configuration: PostgresStoreConfiguration
    let logger: Logger
    let now: @Sendable () -> Double
    let health = Locked(StoreWriteHealth())
    let healthChanged: @Sendable (StoreWriteHealth) -> Void
    let changesCommitted: @Sendable (Int64) -> Void
    /// Set when the leader applies whole-order pushes in the transaction that accepts them
    /// (``ImmediateApply``, PostgresOrderStore+ImmediateApply.swift).
    let immediateApply: ImmediateApply?
    /// The epoch every apply must still hold, while this agent leads; nil when it does not fence
    /// (a single agent, or a test of the store alone).
    let fence = Locked<Int64?>(nil)
    /// True once ``prepare()`` succeeded; until then every operation prepares first.
    let prepared = Locked(false)
    /// True once the pool is told to stop (the agent is stopping): calls failing after that say
    /// nothing about the database, so they leave ``writeHealth`` as it was.
    let stopping = Locked(false)
    /// Pooled connections: their sockets have their keepalive and user timeout, and one missing a
    /// deadline closes them all.
    let sockets: ConfiguredSockets

    /// A store over the database `configuration` names. `now` is the wall clock (Unix seconds)
    /// stamped on what is written; `healthChanged` hears every change of ``writeHealth``;
    /// `changesCommitted` hears the last seq of every transaction of this agent that appended to the
    /// change log, after it committed (it must return at once). With `immediateApply`, the leader
    /// applies whole-order pushes that find the journal empty in the transaction that accepts them.
    public init(
        configuration: PostgresStoreConfiguration, logger: Logger,
        now: @escaping @Sendable () -> Double = { Date().timeIntervalSince1970 },
        healthChanged: @escaping @Sendable (StoreWriteHealth) -> Void = { _ in },
        changesCommitted: @escaping @Sendable (Int64) -> Void = { _ in },
        immediateApply: ImmediateApply? = nil
    ) {
        self.account = configuration.account
        self.configuration = configuration
        // The pool's own background lines (a keep-alive every few seconds) only from info up.
        var background = logger
        background.logLevel = max(.info, logger.logLevel)
        self.client = PostgresClient(configuration: configuration.client, backgroundLogger: background)
        self.sockets = ConfiguredSockets(bound: 4 * configuration.maximumConnections)
        self.logger = logger
        self.now = now
        self.healthChanged = healthChanged
        self.changesCommitted = changesCommitted
        self.immediateApply = immediateApply
    }

    /// Runs the connection pool until the task is cancelled.
    public func run() async {
        await withTaskCancellationHandler {
            await client.run()
        } onCancel: {
            stopping.withLock { $0 = true }
        }
    }

    /// The store's write health now (DESIGN §10).
    public var writeHealth: StoreWriteHealth { health.withLock { $0 } }

    /// Tries a small write and notes its outcome in ``writeHealth``: a transaction that takes a
    /// transaction id commits a WAL record, so an unreachable, read-only (a standby) or full database
    /// fails it; it changes no row. The agent calls it only while the store is unwritable.
    public func probeWrite() async {
        let logger = self.logger
        _ = try? await write { connection in
            _ = try await connection.query("SELECT txid_current()", logger: logger).get()
        }
    }

    /// Applies must hold `epoch` from now on (nil: stop fencing).
    public func fence(epoch: Int64?) {
        fence.withLock { $0 = epoch }
    }

    // MARK: Transactions

    /// Runs `body` in one transaction on a pooled connection and notes the outcome in ``writeHealth``.
    /// `journal` takes the account's journal lock first (every transaction that adds jobs);
    /// `fenced` checks the leader's epoch first (every transaction that applies or advances the cursor).
    func write<T: Sendable>(
        journal: Bool = false, fenced: Bool = false, preparing: Bool = false, within limit: Duration? = nil,
        _ body: @escaping @Sendable (PostgresConnection) async throws -> T
    ) async throws -> T {
        let epoch = fenced ? fence.withLock({ $0 }) : nil
        let account = self.account
        let logger = self.logger
        do {
            let result = try await withLease(preparing: preparing, within: limit) { connection -> T in
                try await connection.query("BEGIN", logger: logger)
                do {
                    if journal { try await Self.lockJournal(account: account, on: connection, logger: logger) }
                    if let epoch { try await Self.check(epoch: epoch, account: account, on: connection, logger: logger) }
                    let result = try await body(connection)
                    // All of the answer, for its command tag (the async form gives none).
                    let tag = try await connection.query("COMMIT", logger: logger).get().metadata.command
                    guard tag == "COMMIT" else { throw RolledBack(tag: tag) }
                    return result
                } catch {
                    _ = try? await connection.query("ROLLBACK", logger: logger)
                    throw error
                }
            }
            noteWrite(failure: nil)
            return result
        } catch {
            noteWrite(failure: error)
            throw Self.readable(error)
        }
    }

    /// Reads on a pooled connection, outside a transaction of its own unless `body` starts one.
    func read<T: Sendable>(
        within limit: Duration? = nil, _ body: @escaping @Sendable (PostgresConnection) async throws -> T
    ) async throws -> T {
        do {
            return try await withLease(within: limit, body)
        } catch {
            noteWrite(failure: error)
            throw Self.readable(error)
        }
    }

    /// Runs `body` on a pooled connection, all of it within `limit` (the configuration's
    /// ``PostgresStoreConfiguration/roundTrip``, `failover_s`, unless a longer one is named):
    ///
    /// - Waiting for a connection ends after `connectTimeout` or `limit`, whichever is first: the
    ///   pool itself keeps trying to connect to a database that is gone for a minute before it gives
    ///   up, and a push must get its `503` long before that.
    /// - Once leased, `body` must end by the deadline. A silently partitioned network makes a query
    ///   hang rather than fail (DESIGN §10), so past the deadline the call fails with
    ///   ``DatabaseTimeout`` and the connection is closed — discarded, never reused; a connection the
    ///   server ended fails the call at once. Either way `body` runs in a task of its own that is
    ///   abandoned then (a query in flight on a dead connection was seen never to return,
    ///   PostgresNIO 1.33); it can commit nothing, its connection being gone. A missed deadline
    ///   closes every other pooled connection too (``ConfiguredSockets``): the network path they
    ///   share is presumed dead.
    ///
    /// Each pooled connection gets TCP keepalive and `TCP_USER_TIMEOUT` when first leased
    /// (``DatabaseSocket``).
    func withLease<T: Sendable>(
        preparing: Bool = false, within limit: Duration? = nil,
        _ body: @escaping @Sendable (PostgresConnection) async throws -> T
    ) async throws -> T {
        // The schema is migrated on first use, so an agent starts while its database is away.
        if !preparing, !prepared.withLock({ $0 }) { try await prepare() }
        let leased = Locked<PostgresConnection?>(nil)
        let limit = limit ?? configuration.roundTrip
        let waitLimit = min(configuration.connectTimeout, limit)
        let (client, sockets, failover, logger) = (self.client, self.sockets, configuration.failover, self.logger)
        return try await DeadlineRace.run({
            do {
                return try await client.withConnection { connection -> T in
                    leased.withLock { $0 = connection }
                    if sockets.isNew(connection) {
                        await DatabaseSocket.configure(connection, failover: failover)
                        if sockets.mustProve(within: failover) {
                            try await connection.answering(within: max(failover / 4, .milliseconds(250))) { connection in
                                try await connection.query("SELECT 1", logger: logger)
                            }
                        }
                    }
                    return try await withTaskExecutorPreference(EventLoopTaskExecutor(connection.eventLoop)) {
                        try await body(connection)
                    }
                }
            } catch {
                // Whatever ended the wait for a connection (the pool's circuit breaker, a refused
                // connection) means the same to the operator; errors after it are the database's.
                // Our own pool closing (the agent stopping) is neither.
                let stopping = (error as? PSQLError)?.code == .poolClosed
                throw leased.withLock { $0 } == nil && !stopping ? DatabaseUnreachable(waited: nil) : error
            }
        }, watch: { settle in
            // The wait for a connection, a connection found closed, and the round trip's deadline.
            let clock = ContinuousClock()
            let start = clock.now
            while true {
                try? await Task.sleep(for: .milliseconds(50))
                if Task.isCancelled { return }
                let elapsed = clock.now - start
                switch leased.withLock({ $0 }) {
                case nil where elapsed >= waitLimit:
                    _ = settle(DatabaseUnreachable(waited: waitLimit))
                case let connection? where connection.isClosed:
                    _ = settle(DatabaseUnreachable(waited: nil))
                case let connection? where elapsed >= limit:
                    if settle(DatabaseTimeout(limit: limit)) {
                        connection.discard()
                        sockets.discardAll()
                    }
                default:
                    continue
                }
                return
            }
        })
    }

    /// The fence (DESIGN §12): the account's epoch must still be ours, read under a share lock that
    /// a takeover's update waits for, so no transaction of a deposed leader commits after it.
    static func check(epoch: Int64, account: String, on connection: PostgresConnection, logger: Logger) async throws {
        var current: Int64?
        for try await value in try await connection.execute(ReadEpoch(account: account), logger: logger) {
            current = value
        }
        guard current == epoch else {
            throw FencedOut(held: epoch, current: current)
        }
    }

    // MARK: Health

    /// Notes a write's outcome; `failure` nil is a success. Errors that are not about the database
    /// being reachable and writable (a constraint, a bug, the fence) do not change the health.
    func noteWrite(failure: (any Error)?) {
        if failure != nil, stopping.withLock({ $0 }) { return }
        let reason = failure.flatMap(Self.storageFault)
        if failure != nil, reason == nil { return }
        let changed = health.withLock { $0.record(fault: reason, at: now()) }
        if let changed { healthChanged(changed) }
    }

    /// The condition behind a database fault, in words an operator can act on; nil for other errors
    /// (the pool closed because this agent is stopping is not the database's fault).
    static func storageFault(_ error: any Error) -> String? {
        if error is DatabaseUnreachable { return "the database cannot be reached" }
        if let error = error as? DatabaseTimeout { return "the database did not answer within \(error.limit)" }
        guard let error = error as? PSQLError else { return nil }
        switch error.code {
        case .connectionError, .serverClosedConnection, .uncleanShutdown, .clientClosedConnection:
            return "the database cannot be reached"
        case .sslUnsupported, .failedToAddSSLHandler, .receivedUnencryptedDataAfterSSLRequest:
            return "the database refused TLS as store.postgres_url's sslmode asks for it"
        case .unsupportedAuthMechanism, .authMechanismRequiresPassword, .saslError:
            return "the database refused the login: check the user and store.postgres_password_file"
        case .queryCancelled:
            return "the database did not answer in time"
        case .server:
            let state = error.serverInfo?[.sqlState] ?? ""
            switch state {
            case "53100": return "the database server's disk is full"
            case "25006": return "the database is read-only (a standby?)"
            case "57P01", "57P02", "57P03": return "the database server is shutting down or starting"
            case "57014": return "the database did not answer in time (statement timeout)"
            case "28000", "28P01": return "the database refused the login: check the user and store.postgres_password_file"
            case "3D000": return "the database named in store.postgres_url does not exist"
            case "53300": return "the database has no connection slots left"
            default: return state.hasPrefix("08") ? "the database connection failed" : nil
            }
        default:
            return nil
        }
    }

    /// PostgresNIO hides a server error's text from `description` (to keep values out of logs); the
    /// SQLSTATE and the server's message name what went wrong without a bound value.
    static func readable(_ error: any Error) -> any Error {
        if let error = error as? DatabaseUnreachable { return PostgresStoreError(error.description) }
        if let error = error as? DatabaseTimeout { return PostgresStoreError(error.description) }
        guard let error = error as? PSQLError else { return error }
        var parts = [storageFault(error) ?? "the database failed (\(error.code))"]
        if let info = error.serverInfo {
            if let state = info[.sqlState] { parts.append("SQLSTATE \(state)") }
            if let message = info[.message] { parts.append(message) }
        }
        return PostgresStoreError(parts.joined(separator: ": "))
    }
}

/// A transaction of a leader that another agent has since replaced: refused before it changed anything.
public struct FencedOut: Error, Sendable, Hashable, CustomStringConvertible {
    /// The epoch this agent held.
    public var held: Int64
    /// The account's epoch now, if it has one.
    public var current: Int64?

    public var description: String {
        "this agent's leadership (epoch \(held)) was taken over (epoch \(current.map(String.init) ?? "none")): "
            + "the write was refused"
    }
}

/// No connection to the database could be had.
struct DatabaseUnreachable: Error, CustomStringConvertible {
    /// How long the wait for a connection was, when it ran out.
    var waited: Duration?

    var description: String {
        "the database cannot be reached" + (waited.map { ": no connection within \($0)" } ?? "")
            + "; check store.postgres_url and that the server is running"
    }
}

/// A transaction that did not commit although every statement in it seemed to succeed: PostgreSQL
/// answered its `COMMIT` with `ROLLBACK`, which it does when an earlier statement failed. Nothing of
/// it was stored, so nothing of it may be acknowledged.
struct RolledBack: Error, CustomStringConvertible {
    let tag: String
    var description: String {
        "the database rolled the transaction back (it answered COMMIT with \(tag.isEmpty ? "nothing" : tag)): "
            + "an earlier statement in it failed; nothing of it was stored"
    }
}

/// A task executor that runs jobs on one NIO event loop: a transaction's body runs on its
/// connection's event loop.
///
/// A transaction is a chain of round trips, and on the default executor each one costs two thread
/// hops: the query is handed from the cooperative pool to the connection's event loop, and its
/// answer resumes the body back on the pool. On two busy cores those hops were most of a push
/// batch's time (docs/PERFORMANCE.md, "The store on PostgreSQL"). On the event loop the query is
/// written inline and the answer resumes the body on the same thread.
///
/// Thread rule: only work that never blocks runs here. A body issues queries and builds their
/// arguments in memory; it takes no lock but `Locked`'s short critical sections, and waits for
/// nothing but its own queries.
final class EventLoopTaskExecutor: TaskExecutor {
    let eventLoop: any EventLoop

    init(_ eventLoop: any EventLoop) {
        self.eventLoop = eventLoop
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        eventLoop.execute { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
    }
}
