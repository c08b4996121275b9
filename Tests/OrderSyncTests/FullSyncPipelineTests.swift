import AsyncSignals
import Dispatch
import Logging
import SQLiteStore
import StoreModel
import OrderSync
import ServiceLifecycleTestKit
import TestHarnesses
import TestKit
import Testing
import Sandbox

/// A full sync fetches the next page while the executor's thread applies the current one. The apply
/// is synchronous SQLite work on that one thread (``ExecutorService``), so a fetch that waits for the
/// thread starts only when the apply ends, and a cold start takes the sum of the two.
@Suite(.timeLimit(.minutes(3))) struct FullSyncPipelineTests {
    /// The real source, announcing each page fetch after the first.
    final class AnnouncingSource: OrderSource {
        let source: any OrderSource
        let nextPageFetchStarted = DispatchSemaphore(value: 0)

        init(_ source: any OrderSource) {
            self.source = source
        }

        func fetchOrder(id: String) async throws(SyncError) -> OrderRecord? { try await source.fetchOrder(id: id) }

        func fetchPage(cursor: String?, limit: Int) async throws(SyncError) -> (orders: [OrderRecord], next: String?) {
            if cursor != nil { nextPageFetchStarted.signal() }
            return try await source.fetchPage(cursor: cursor, limit: limit)
        }
    }

    /// The real store, every capability passed through but a page's apply, which `applyPage` does.
    final class ScriptedStore: JobApplier {
        let store: SQLiteOrderStore
        let page: @Sendable (SQLiteOrderStore, [OrderRecord], Int64?) async throws -> Void

        init(_ store: SQLiteOrderStore, applyPage: @escaping @Sendable (SQLiteOrderStore, [OrderRecord], Int64?) async throws -> Void) {
            self.store = store
            page = applyPage
        }

        func applyPage(_ orders: [OrderRecord], for jobID: Int64?) async throws { try await page(store, orders, jobID) }
        func headJobs(limit: Int) async throws -> [JobRecord] { try store.headJobs(limit: limit) }
        func headJobs(after id: Int64, limit: Int) async throws -> [JobRecord] { try store.headJobs(after: id, limit: limit) }
        func applyInOneTransaction(_ jobs: [JobRecord]) async throws -> Int { try store.applyInOneTransaction(jobs) }
        func applyUpsert(_ order: OrderRecord, completing jobID: Int64?) async throws -> UpsertOutcome {
            try store.applyUpsert(order, completing: jobID)
        }
        func applyDelete(orderID: String, version: Int64?, completing jobID: Int64?) async throws -> DeleteOutcome {
            try store.applyDelete(orderID: orderID, version: version, completing: jobID)
        }
        func completeFullSync(keeping ids: Set<String>, completing jobID: Int64?) async throws -> Int {
            try store.completeFullSync(keeping: ids, completing: jobID)
        }
        func recordFailure(jobID: Int64, reason: String, retryAt: Double, countsAttempt: Bool) async throws {
            try store.recordFailure(jobID: jobID, reason: reason, retryAt: retryAt, countsAttempt: countsAttempt)
        }
        func deadLetter(job: JobRecord, reason: String) async throws { try store.deadLetter(job: job, reason: reason) }
    }

    /// The real store, whose first page apply holds the executor's thread, as SQLite does, until the
    /// next page's fetch has started (or 20 s have passed); whether it saw that, nil before it ran.
    static func holdingStore(_ store: SQLiteOrderStore, source: AnnouncingSource) -> (ScriptedStore, Locked<Bool?>) {
        let overlapped = Locked<Bool?>(nil)
        let scripted = ScriptedStore(store) { store, orders, jobID in
            if overlapped.withLock({ $0 }) == nil {
                let started = source.nextPageFetchStarted.wait(timeout: .now() + .seconds(20)) == .success
                overlapped.withLock { $0 = started }
            }
            try store.applyPage(orders, for: jobID)
        }
        return (scripted, overlapped)
    }

    struct Refused: Error {}

    /// The real source, every call passed through but a page fetched for later, which `fetch` does.
    final class ScriptedSource: OrderSource {
        typealias Fetch = @Sendable (OrdersClient, String?, Int) async throws(SyncError) -> FetchedPage
        let client: OrdersClient
        let fetch: Fetch

        init(_ client: OrdersClient, fetchPageForLater: @escaping Fetch) {
            self.client = client
            fetch = fetchPageForLater
        }

        func fetchOrder(id: String) async throws(SyncError) -> OrderRecord? { try await client.fetchOrder(id: id) }
        func fetchPage(cursor: String?, limit: Int) async throws(SyncError) -> (orders: [OrderRecord], next: String?) {
            try await client.fetchPage(cursor: cursor, limit: limit)
        }
        func fetchPageForLater(cursor: String?, limit: Int) async throws(SyncError) -> FetchedPage {
            try await fetch(client, cursor, limit)
        }
    }

    /// The real source, whose first page's decoding waits until the second page has been asked for
    /// (or 20 s have passed): the pages come one cursor after another, so a decode in the way of the
    /// next request made each page wait for the one before it to be decoded. Whether the decoding saw
    /// the second fetch start; nil before it ran.
    static func decodeHoldingSource(_ client: OrdersClient) -> (ScriptedSource, Locked<Bool?>) {
        let laterFetchStarted = DispatchSemaphore(value: 0)
        let overlapped = Locked<Bool?>(nil)
        let source = ScriptedSource(client) { client, cursor, limit throws(SyncError) in
            if cursor != nil { laterFetchStarted.signal() }
            let page = try await client.fetchPageForLater(cursor: cursor, limit: limit)
            guard cursor == nil else { return page }
            return FetchedPage(next: page.next) { () throws(SyncError) in
                if overlapped.withLock({ $0 }) == nil {
                    let seen = laterFetchStarted.wait(timeout: .now() + .seconds(20)) == .success
                    overlapped.withLock { $0 = seen }
                }
                return try page.orders()
            }
        }
        return (source, overlapped)
    }

    /// Runs one full sync of `store` from `source` through ``ExecutorService``, as the agent runs it.
    private func fullSync(_ harness: SyncHarness, store: any JobApplier, source: any OrderSource) async throws {
        let (outcomes, outcome) = AsyncStream.makeStream(of: SyncExecutor.Outcome.self)
        let executor = SyncExecutor(
            store: store, source: source, configuration: .init(pageSize: 2),
            observe: { kind, result in if kind == .fullSync { outcome.yield(result) } }, logger: quietLogger)
        try await harness.store.journal([NewJob(kind: .fullSync, source: "test")])
        let wake = WakeSignal()
        let service = ExecutorService(executor: executor, wake: wake)
        try await testGracefulShutdown { trigger in
            let running = Task { try await service.run() }
            var finished = outcomes.makeAsyncIterator()
            #expect(await finished.next() == .completed)
            trigger.triggerGracefulShutdown()
            try await running.value
        }
    }

    /// A Sandbox holding `orders` orders (pages of 2) and an orders client of it, for `body`.
    private func withOrders(
        _ orders: Int, _ body: (SyncHarness, OrdersClient) async throws -> Void
    ) async throws {
        try await SyncHarness.run(pageSize: 2) { harness in
            for _ in 0..<orders { harness.sandbox.orders.create(announce: .silent) }
            let base = await harness.sandbox.baseURL
            try await body(harness, OrdersClient(loop: harness.loop, session: harness.session, baseURL: base))
        }
    }

    @Test func theNextPageIsFetchedWhileTheExecutorsThreadAppliesThisOne() async throws {
        try await withOrders(5) { harness, client in
            let source = AnnouncingSource(client)
            let (store, overlapped) = Self.holdingStore(harness.store, source: source)
            try await fullSync(harness, store: store, source: source)
            #expect(overlapped.withLock { $0 } == true,
                    "the second page's fetch did not start while the first page's apply held the executor's thread")
            #expect(try harness.local() == harness.upstream())
        }
    }

    @Test func theNextPageIsAskedForBeforeThisOneIsDecoded() async throws {
        try await withOrders(5) { harness, client in
            let (source, overlapped) = Self.decodeHoldingSource(client)
            try await fullSync(harness, store: harness.store, source: source)
            #expect(overlapped.withLock { $0 } == true,
                    "the second page was not asked for while the first page was being decoded")
            #expect(try harness.local() == harness.upstream())
        }
    }

    @Test func anApplyThatFailsEndsTheJobAndTheFetchesAheadOfIt() async throws {
        try await withOrders(40) { harness, client in
            let pages = Locked(0)
            let source = ScriptedSource(client) { client, cursor, limit throws(SyncError) in
                pages.withLock { $0 += 1 }
                return try await client.fetchPageForLater(cursor: cursor, limit: limit)
            }
            let applied = Locked(0)
            let failing = ScriptedStore(harness.store) { store, orders, jobID in
                // The second page's apply fails.
                if applied.withLock({ count in
                    count += 1
                    return count
                }) == 2 { throw Refused() }
                try store.applyPage(orders, for: jobID)
            }
            let executor = SyncExecutor(store: failing, source: source, configuration: .init(pageSize: 2), logger: quietLogger)
            try await harness.store.journal([NewJob(kind: .fullSync, source: "test")])
            #expect(try await executor.runReadyJobs().failed == 1)
            // Two pages applied or refused, two waiting in the hand-off, one held by a waiting send and
            // one fetch in flight: the stages stopped there instead of reading all 20 pages.
            #expect(pages.withLock { $0 } <= 6)
            #expect(try harness.store.pendingJobs(limit: 10).map(\.kind) == [.fullSync], "the job stays to be retried")
        }
    }
}
