public import AuthSession
public import CurlHTTP
public import EventStream
import Foundation
public import SQLiteStore
import StoreModel
public import OrderSync
public import Sandbox
public import TestKit

/// A Sandbox order book, a logged-in session, a fresh store and an executor over them.
public struct SyncHarness: Sendable {
    public let sandbox: Sandbox
    public let store: SQLiteOrderStore
    public let executor: SyncExecutor
    public let wall: WallClock
    public let loop: CurlLoop
    public let session: Session
    public let headers: any EventStreamHeaderProvider

    /// `retryBase` and `probeMaximum` as ``SyncExecutor/Configuration`` says; the probes' jitter is
    /// none (the longest delay), so a test can step the wall clock past it.
    public static func run(
        maximumAttempts: Int = 8, pageSize: Int = 500, retention: Int = 10_000, retryBase: Duration = .seconds(1),
        probeMaximum: Duration = .seconds(5), _ body: (SyncHarness) async throws -> Void
    ) async throws {
        let wall = WallClock()
        let configuration = SandboxConfiguration(
            port: 0, auth: SandboxAuthConfiguration(requiresAuthentication: true, now: { wall.now }), feed: .orderBook,
            orderRetention: retention)
        let temporary = try TemporaryStore(now: { wall.now })
        try await Sandbox.withRunning(configuration) { sandbox in
            let base = await sandbox.baseURL
            try await CurlLoop.withLoop(logger: quietLogger) { loop in
                let session = Session.sandboxed(
                    loop: loop, baseURL: base, directory: temporary.directory + "/state", now: { wall.now },
                    logger: quietLogger)
                let source = OrdersClient(loop: loop, session: session, baseURL: base, now: { wall.now })
                let executor = SyncExecutor(
                    store: temporary.store, source: source,
                    configuration: .init(
                        maximumAttempts: maximumAttempts, pageSize: pageSize, retryBase: retryBase, probeMaximum: probeMaximum),
                    now: { wall.now }, random: { 1 }, logger: quietLogger)
                try await body(SyncHarness(
                    sandbox: sandbox, store: temporary.store, executor: executor, wall: wall, loop: loop,
                    session: session, headers: SessionHeaderProvider(session: session)))
                _ = temporary
            }
        }
    }

    /// The store's orders as id → (status, version), to compare with the Sandbox's.
    public func local() throws -> [String: String] {
        Dictionary(uniqueKeysWithValues: try store.orders().map { ($0.id, "\($0.status)@\($0.version ?? -1)") })
    }

    public func upstream() -> [String: String] {
        sandbox.orders.snapshot.mapValues { "\($0.status)@\($0.version)" }
    }
}
