import AsyncSignals
import AuthSession
import CurlHTTP
import EventStream
import Foundation
import SQLiteStore
import StoreModel
import OrderSync
import Sandbox
import ServerSentEvents
import Synchronization

// MARK: Store

/// Full-order events from the Sandbox's order book into SQLite (journal per event, then applied),
/// next to a count-only consumer of the same stream.
func storeBenchmark() async throws {
    let events = 50_000
    try await Sandbox.withRunning(SandboxConfiguration(port: 0, feed: .orderBook, orderRetention: events + 10)) { sandbox in
        for _ in 0..<events { sandbox.orders.create() }
        let url = await sandbox.baseURL + "/v1/events"
        let target = "\(sandbox.orders.latestSequence)"
        try await CurlLoop.withLoop(logger: quiet) { loop in
            let reference = try await measure(3) {
                var count = 0
                let source = EventSource(configuration: EventSourceConfiguration(url: url, idleTimeout: nil),
                                         loop: loop, clock: ContinuousClock(), logger: quiet)
                _ = try await source.run { update in
                    if case .event(let event) = update {
                        count += 1
                        if event.lastEventID == target { source.stop() }
                    }
                }
                return count
            }
            report("stream → SQLite, \(events) full-order events", "count-only consumer (reference)",
                   bytes: 0, seconds: reference.seconds, events: reference.count)
            let journalOnly = ProcessInfo.processInfo.environment["JOURNAL_ONLY"] != nil
            // As `orderlive run` stores them (whole orders into an empty journal are applied in the
            // transaction that journals them), then as every job was before (journaled, then applied
            // and removed by the executor), on the same stream in the same run.
            for immediate in [true, false] {
                let stored = try await measure(3) {
                    let sqlite = try SQLitePipelineStore(immediateApply: immediate)
                    defer { sqlite.remove() }
                    let pipeline = Pipeline(loop: loop, eventsURL: url, store: sqlite.store, directory: sqlite.directory)
                    let count = try await pipeline.stream(until: target, applying: !journalOnly)
                    if journalOnly { return count }
                    let storedOrders = try sqlite.store.counts().orders
                    precondition(storedOrders == events, "stored \(storedOrders) of \(events)")
                    return count
                }
                report("stream → SQLite, \(events) full-order events",
                       immediate ? "applied as journaled (orderlive run)" : "journaled, then applied by the executor",
                       bytes: 0, seconds: stored.seconds, events: stored.count,
                       note: "\(format(reference.seconds / stored.seconds, 2))× of the reference")
            }
        }
    }
}

/// Event creation at the Sandbox → committed (applied at once, as `orderlive run` stores a whole
/// order into an empty journal), at 1,000 events/s for 5 s: p50 and p99.
/// The clock starts when the Sandbox creates the change, so the figure includes the server and the
/// network as well as the parse and the commit.
func commitLatency() async throws {
    try await Sandbox.withRunning(SandboxConfiguration(port: 0, feed: .orderBook)) { sandbox in
        let url = await sandbox.baseURL + "/v1/events"
        let created = Timestamps()
        let total = 5_000
        try await CurlLoop.withLoop(logger: quiet) { loop in
            let sqlite = try SQLitePipelineStore(immediateApply: true)
            defer { sqlite.remove() }
            let pipeline = Pipeline(loop: loop, eventsURL: url, store: sqlite.store, directory: sqlite.directory)
            let (ingest, executor, wake) = (pipeline.ingest, pipeline.executor, pipeline.wake)
            let executorTask = Task { await executor.run(wake: wake) }
            let producer = Task {
                let start = ContinuousClock.now
                for index in 0..<total {
                    try await Task.sleep(until: start.advanced(by: .microseconds(1_000 * index)), clock: .continuous)
                    sandbox.orders.create()
                    let sequence = "\(sandbox.orders.latestSequence)"
                    created.map.withLock { $0[sequence] = .now }
                }
            }
            let measured = Mutex<[Double]>([])
            var pending: [ServerSentEvents.ServerSentEvent] = []
            // As `orderlive run` journals: each batch translated while the one before it commits.
            var journal = ingest.pipelinedJournal()
            let source = EventSource(configuration: EventSourceConfiguration(url: url, idleTimeout: nil),
                                     loop: loop, clock: ContinuousClock(), logger: quiet)
            _ = try await source.run({ update in
                if case .event(let event) = update { pending.append(event) }
            }, batchEnded: {
                guard !pending.isEmpty else { return }
                let ids = pending.map(\.lastEventID)
                try await journal.journal(pending) {
                    let committed = ContinuousClock.now
                    wake.signal()
                    for id in ids {
                        if let at = created.map.withLock({ $0[id] }) {
                            let elapsed = at.duration(to: committed)
                            measured.withLock {
                                $0.append(Double(elapsed.components.seconds) * 1000 + Double(elapsed.components.attoseconds) / 1e15)
                            }
                        }
                    }
                }
                if pending.last?.lastEventID == "\(total)" { source.stop() }
                pending.removeAll(keepingCapacity: true)
            })
            try await journal.settle()
            try await producer.value
            executorTask.cancel()
            await executorTask.value
            var latencies = measured.withLock { $0 }
            latencies.sort()
            let p50 = latencies[latencies.count / 2]
            let p99 = latencies[min(latencies.count - 1, latencies.count * 99 / 100)]
            report("creation → committed at 1,000 events/s (5 s)", "committed per parser batch",
                   bytes: 0, seconds: 5, events: latencies.count,
                   note: "p50 \(format(p50, 2)) ms, p99 \(format(p99, 2)) ms, max \(format(latencies.last ?? 0, 2)) ms")
        }
    }
}

/// A fresh SQLite store in a temporary directory; with `immediateApply` as `orderlive run` opens it.
struct SQLitePipelineStore {
    let directory = NSTemporaryDirectory() + "orderlive-bench-\(UUID().uuidString)"
    let store: SQLiteOrderStore

    init(immediateApply: Bool) throws {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        store = try SQLiteOrderStore(path: directory + "/orderlive.sqlite", immediateApply: immediateApply ? ImmediateApply() : nil)
    }

    func remove() {
        try? FileManager.default.removeItem(atPath: directory)
    }
}

/// `store` with the stream service, executor and wake signal `orderlive run` builds around it. Only
/// the stream service's journaling is used (the benchmark drives the event source itself), so its
/// session (credentials in `directory`) never logs in.
struct Pipeline {
    let ingest: StreamService<ContinuousClock>
    let executor: SyncExecutor
    let wake = WakeSignal()
    let loop: CurlLoop
    let eventsURL: String

    init(loop: CurlLoop, eventsURL: String, store: any OrderStoreEngine, directory: String) {
        self.loop = loop
        self.eventsURL = eventsURL
        let session = Session(
            dependencies: .init(
                client: AuthClient(loop: loop, endpoints: .init(baseURL: eventsURL)),
                store: CredentialStore(directory: directory), identifier: "bench"),
            logger: quiet)
        ingest = StreamService(
            source: EventSourceConfiguration(url: eventsURL), loop: loop, session: session, store: store, wake: wake,
            logger: quiet)
        executor = SyncExecutor(store: store, source: NoSource(), logger: quiet)
    }

    /// Streams until the event with id `target`, as `orderlive run` does it: events journaled per
    /// parser batch (one transaction with the batch's last cursor — group commit) and, when
    /// `applying`, the executor beside the stream, woken after each commit; at the end it is stopped
    /// (between jobs) and whatever is left applied. Returns the events read.
    func stream(until target: String, applying: Bool) async throws -> Int {
        let (ingest, executor, wake) = (self.ingest, self.executor, self.wake)
        let executorTask = Task { if applying { await executor.run(wake: wake) } }
        var count = 0
        var pending: [ServerSentEvents.ServerSentEvent] = []
        var journal = ingest.pipelinedJournal()
        let source = EventSource(configuration: EventSourceConfiguration(url: eventsURL, idleTimeout: nil),
                                 loop: loop, clock: ContinuousClock(), logger: quiet)
        _ = try await source.run({ update in
            if case .event(let event) = update {
                pending.append(event)
                count += 1
                if event.lastEventID == target { source.stop() }
            }
        }, batchEnded: {
            try await journal.journal(pending) { wake.signal() }
            pending.removeAll(keepingCapacity: true)
        })
        try await journal.settle()
        executorTask.cancel()
        await executorTask.value
        if applying { try await executor.runReadyJobs() }
        return count
    }
}

/// Creation times by event id, shared between the producer task and the consumer.
final class Timestamps: Sendable {
    let map = Mutex<[String: ContinuousClock.Instant]>([:])
}

/// The store benchmark's events all carry full orders: nothing is fetched.
struct NoSource: OrderSource {
    func fetchOrder(id: String) async throws(SyncError) -> OrderRecord? { throw SyncError("no fetches here") }
    func fetchPage(cursor: String?, limit: Int) async throws(SyncError) -> (orders: [OrderRecord], next: String?) {
        throw SyncError("no full sync here")
    }
}
