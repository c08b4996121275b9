// orderlive benchmarks: every figure next to a reference measured in the same run on the same bytes
// (DESIGN §9). Release builds only: `make bench`.

import AsyncSignals
import AuthSession
import CurlHTTP
import EventStream
import Foundation
import Logging
import OpenAPIRuntime
import OrderStore
import OrderSync
import Sandbox
import ServerSentEvents
import Synchronization

let rounds = Int(ProcessInfo.processInfo.environment["BENCH_ROUNDS"] ?? "") ?? 5
let quiet = Logger(label: "bench", factory: { _ in SwiftLogNoOpLogHandler() })

// MARK: Measurement

/// Median wall time of `rounds` runs; `body` returns a count that is checked to stay the same.
func measure(_ rounds: Int, _ body: () async throws -> Int) async rethrows -> (seconds: Double, count: Int) {
    var times: [Double] = []
    var count = 0
    for _ in 0..<max(1, rounds) {
        let start = ContinuousClock.now
        count = try await body()
        let elapsed = start.duration(to: .now)
        times.append(Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18)
    }
    times.sort()
    return (times[times.count / 2], count)
}

/// The synchronous twin of `measure`.
func measureSync(_ rounds: Int, _ body: () -> Int) -> (seconds: Double, count: Int) {
    var times: [Double] = []
    var count = 0
    for _ in 0..<max(1, rounds) {
        let start = ContinuousClock.now
        count = body()
        let elapsed = start.duration(to: .now)
        times.append(Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18)
    }
    times.sort()
    return (times[times.count / 2], count)
}

func chunked(_ bytes: [UInt8], size: Int) -> [ArraySlice<UInt8>] {
    stride(from: 0, to: bytes.count, by: size).map { bytes[$0..<min($0 + size, bytes.count)] }
}

func format(_ value: Double, _ digits: Int = 1) -> String {
    String(format: "%.\(digits)f", value)
}

struct Row {
    var name: String
    var reader: String
    var megabytesPerSecond: Double
    var eventsPerSecond: Double
    var note: String
}

let rows = Mutex<[Row]>([])

func report(_ name: String, _ reader: String, bytes: Int, seconds: Double, events: Int, note: String = "") {
    let row = Row(name: name, reader: reader, megabytesPerSecond: Double(bytes) / seconds / 1e6,
                  eventsPerSecond: Double(events) / seconds, note: note)
    rows.withLock { $0.append(row) }
}

// MARK: Readers

func parseWithOurs(_ chunks: [ArraySlice<UInt8>]) -> Int {
    var parser = ServerSentEventParser()
    var events = 0
    for chunk in chunks {
        chunk.withUnsafeBytes { raw in
            parser.parse(raw) { item in
                if case .event = item { events += 1 }
            }
        }
    }
    return events
}

struct Chunks: AsyncSequence, Sendable {
    typealias Element = ArraySlice<UInt8>
    let chunks: [ArraySlice<UInt8>]
    struct AsyncIterator: AsyncIteratorProtocol {
        var base: IndexingIterator<[ArraySlice<UInt8>]>
        mutating func next() async -> ArraySlice<UInt8>? { base.next() }
    }
    func makeAsyncIterator() -> AsyncIterator { AsyncIterator(base: chunks.makeIterator()) }
}

func parseWithOpenAPIRuntime(_ chunks: [ArraySlice<UInt8>]) async throws -> Int {
    var events = 0
    for try await _ in Chunks(chunks: chunks).asDecodedServerSentEvents() { events += 1 }
    return events
}

func countLineFeeds(_ chunks: [ArraySlice<UInt8>]) -> Int {
    var count = 0
    for chunk in chunks {
        chunk.withUnsafeBytes { raw in
            guard var cursor = raw.baseAddress else { return }
            let end = cursor + raw.count
            while cursor < end, let found = memchr(cursor, 0x0A, end - cursor) {
                count += 1
                cursor = UnsafeRawPointer(found) + 1
            }
        }
    }
    return count
}

// MARK: Parser cases

func parserBenchmarks() async throws {
    let feed = OrderFeed(orderCount: 50)
    var small: [UInt8] = []
    for sequence in 1...100_000 { small += Array(feed.wireEvent(sequence: sequence).utf8) }
    let megabyteLine = [UInt8]("data: ".utf8) + [UInt8](repeating: 0x78, count: 1 << 20) + [0x0A, 0x0A]
    var large: [UInt8] = []
    for _ in 0..<20 { large += megabyteLine }
    let huge = [UInt8]("data: ".utf8) + [UInt8](repeating: 0x79, count: 14_000_000) + [0x0A, 0x0A]

    let cases: [(String, [UInt8], Int)] = [
        ("a: 100k order events (~\(small.count / 100_000) B), 16 KiB chunks", small, 16_384),
        ("b: 20 events of 1 MiB data, 16 KiB chunks", large, 16_384),
        ("c: one 14 MB data line, 2 chunks", huge, huge.count / 2 + 1),
        ("d: one 14 MB data line, 16 KiB chunks", huge, 16_384),
    ]
    for (name, bytes, chunkSize) in cases {
        let chunks = chunked(bytes, size: chunkSize)
        let ours = measureSync(rounds) { parseWithOurs(chunks) }
        report(name, "orderlive ServerSentEventParser", bytes: bytes.count, seconds: ours.seconds, events: ours.count)
        let referenceRounds = name.hasPrefix("d") ? min(rounds, 3) : rounds
        let reference = try await measure(referenceRounds) { try await parseWithOpenAPIRuntime(chunks) }
        report(name, "swift-openapi-runtime 1.13.4 decoder", bytes: bytes.count, seconds: reference.seconds,
               events: reference.count, note: "ours is \(format(reference.seconds / ours.seconds))× faster")
        let ceiling = measureSync(rounds) { countLineFeeds(chunks) }
        report(name, "memchr LF count (ceiling)", bytes: bytes.count, seconds: ceiling.seconds, events: ours.count,
               note: "ours at \(format(ceiling.seconds / ours.seconds * 100, 0)) % of it")
        precondition(ours.count == reference.count, "readers disagree on \(name): \(ours.count) vs \(reference.count)")
    }
}

// MARK: Transport

/// Counts bytes in the curl callback and nothing else: the reference for the delivery path.
final class CountingDelegate: StreamingResponseDelegate {
    let bytes = Atomic<Int>(0)
    private let done = Mutex<CheckedContinuation<Void, Never>?>(nil)
    private let finished = Atomic<Bool>(false)

    func transferDidReceiveHead(_ head: HTTPResponseHead) {}

    func transferDidReceive(_ chunk: UnsafeRawBufferPointer) -> Bool {
        bytes.add(chunk.count, ordering: .relaxed)
        return true
    }

    func transferDidComplete(_ result: Result<HTTPResponseHead, CurlError>) {
        finished.store(true, ordering: .sequentiallyConsistent)
        done.withLock { $0 }?.resume()
    }

    func wait() async {
        await withCheckedContinuation { continuation in
            let already = done.withLock { slot -> Bool in
                if finished.load(ordering: .sequentiallyConsistent) { return true }
                slot = continuation
                return false
            }
            if already { continuation.resume() }
        }
    }
}

func residentMegabytes(_ field: String) -> Double {
    guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return 0 }
    for line in status.split(separator: "\n") where line.hasPrefix(field + ":") {
        let kilobytes = Double(line.split(separator: " ").dropFirst().first ?? "0") ?? 0
        return kilobytes / 1024
    }
    return 0
}

func resetPeakResident() {
    // Linux ≥ 4.0: writing 5 to clear_refs resets VmHWM to the current RSS.
    if let handle = FileHandle(forWritingAtPath: "/proc/self/clear_refs") {
        handle.write(Data("5".utf8))
        try? handle.close()
    }
}

func transportBenchmarks() async throws {
    try await Sandbox.withRunning { sandbox in
        let base = await sandbox.baseURL
        try await CurlLoop.withLoop(logger: quiet) { loop in
            let blocks = 1_500
            let url = base + "/sandbox/firehose/\(blocks)"
            let eventsExpected = blocks * OrderFeed.firehoseEventsPerBlock
            let streamBytes = blocks * OrderFeed.firehoseBlock.count

            let reference = try await measure(rounds) {
                let delegate = CountingDelegate()
                _ = try loop.startStream(HTTPRequest(url: url, timeout: nil), delegate: delegate)
                await delegate.wait()
                return delegate.bytes.load(ordering: .relaxed)
            }
            precondition(reference.count == streamBytes)
            report("curl loop → consumer, \(streamBytes / 1_000_000) MB firehose", "count-only curl callback (reference)",
                   bytes: streamBytes, seconds: reference.seconds, events: eventsExpected)

            let delivered = try await measure(rounds) {
                var count = 0
                let source = EventSource(
                    configuration: EventSourceConfiguration(url: url, idleTimeout: nil, reconnects: false),
                    loop: loop, clock: ContinuousClock(), logger: quiet)
                _ = try await source.run { update in
                    if case .event = update { count += 1 }
                }
                return count
            }
            precondition(delivered.count == eventsExpected, "delivered \(delivered.count) of \(eventsExpected)")
            report("curl loop → consumer, \(streamBytes / 1_000_000) MB firehose", "EventSource, parsed events delivered",
                   bytes: streamBytes, seconds: delivered.seconds, events: delivered.count,
                   note: "\(format(reference.seconds / delivered.seconds, 2))× of the reference")

            // A consumer far slower than the stream (2 µs of busy work per event): backpressure must
            // hold memory flat instead of buffering the stream.
            let slowBlocks = 3_000
            let slowURL = base + "/sandbox/firehose/\(slowBlocks)"
            resetPeakResident()
            let before = residentMegabytes("VmRSS")
            var spin = 0
            let slow = try await measure(1) {
                var count = 0
                let source = EventSource(
                    configuration: EventSourceConfiguration(url: slowURL, idleTimeout: nil, reconnects: false),
                    loop: loop, clock: ContinuousClock(), logger: quiet)
                _ = try await source.run { update in
                    if case .event(let event) = update {
                        count += 1
                        spin &+= event.data.utf8.count
                        let until = ContinuousClock.now.advanced(by: .microseconds(2))
                        while ContinuousClock.now < until { spin &+= 1 }
                    }
                }
                return count
            }
            let peak = residentMegabytes("VmHWM")
            report("slow consumer, \(slowBlocks * OrderFeed.firehoseBlock.count / 1_000_000) MB stream",
                   "EventSource with a slow handler", bytes: slowBlocks * OrderFeed.firehoseBlock.count,
                   seconds: slow.seconds, events: slow.count,
                   note: "RSS \(format(before)) MB before, peak \(format(peak)) MB during"
                       + (spin == 42 ? "." : ""))
        }
    }
}

/// RSS after 100 warm-up reconnects and after 1,000 more: each connection gets one 64 KiB block and
/// a clean end, and the stream reconnects at once.
func reconnectMemory() async throws {
    try await Sandbox.withRunning { sandbox in
        let url = await sandbox.baseURL + "/sandbox/firehose/1"
        try await CurlLoop.withLoop(logger: quiet) { loop in
            func reconnect(_ times: Int) async throws -> Int {
                var losses = 0
                let source = EventSource(
                    configuration: EventSourceConfiguration(url: url, initialDelay: .zero, idleTimeout: nil),
                    loop: loop, clock: ContinuousClock(), logger: quiet)
                _ = try await source.run { update in
                    if case .connectionLost = update {
                        losses += 1
                        if losses == times { source.stop() }
                    }
                }
                return losses
            }
            _ = try await reconnect(100)
            let before = residentMegabytes("VmRSS")
            let start = ContinuousClock.now
            let count = try await reconnect(1_000)
            let elapsed = start.duration(to: .now)
            let after = residentMegabytes("VmRSS")
            let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
            report("1,000 reconnects (one 64 KiB block each)", "EventSource", bytes: count * OrderFeed.firehoseBlock.count,
                   seconds: seconds, events: count * OrderFeed.firehoseEventsPerBlock,
                   note: "RSS \(format(before)) MB after 100 warm-up reconnects, \(format(after)) MB after 1,000 more")
        }
    }
}

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
            let stored = try await measure(3) {
                let pipeline = try Pipeline(loop: loop, eventsURL: url)
                defer { pipeline.remove() }
                let (store, ingest, executor, wake) = (pipeline.store, pipeline.ingest, pipeline.executor, pipeline.wake)
                // As `orderlive run` does it: the executor runs beside the stream, woken after each
                // group commit; at the end it is stopped (between jobs) and whatever is left applied.
                let journalOnly = ProcessInfo.processInfo.environment["JOURNAL_ONLY"] != nil
                let executorTask = Task { if !journalOnly { await executor.run(wake: wake) } }
                var count = 0
                var pending: [ServerSentEvents.ServerSentEvent] = []
                let source = EventSource(configuration: EventSourceConfiguration(url: url, idleTimeout: nil),
                                         loop: loop, clock: ContinuousClock(), logger: quiet)
                _ = try await source.run({ update in
                    if case .event(let event) = update {
                        pending.append(event)
                        count += 1
                        if event.lastEventID == target { source.stop() }
                    }
                }, batchEnded: {
                    // Group commit: the batch's jobs and last cursor in one transaction.
                    try ingest.journal(batch: pending)
                    pending.removeAll(keepingCapacity: true)
                    wake.signal()
                })
                executorTask.cancel()
                await executorTask.value
                if journalOnly { return count }
                try await executor.runReadyJobs()
                let storedOrders = try store.counts().orders
                precondition(storedOrders == events, "stored \(storedOrders) of \(events)")
                return count
            }
            report("stream → SQLite, \(events) full-order events", "journaled per parser batch, applied beside the stream",
                   bytes: 0, seconds: stored.seconds, events: stored.count,
                   note: "\(format(reference.seconds / stored.seconds, 2))× of the reference")
        }
    }
}

/// Event creation at the Sandbox → committed in the journal, at 1,000 events/s for 5 s: p50 and p99.
/// The clock starts when the Sandbox creates the change, so the figure includes the server and the
/// network as well as the parse and the commit.
func commitLatency() async throws {
    try await Sandbox.withRunning(SandboxConfiguration(port: 0, feed: .orderBook)) { sandbox in
        let url = await sandbox.baseURL + "/v1/events"
        let created = Timestamps()
        let total = 5_000
        try await CurlLoop.withLoop(logger: quiet) { loop in
            let pipeline = try Pipeline(loop: loop, eventsURL: url)
            defer { pipeline.remove() }
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
            var latencies: [Double] = []
            var pending: [ServerSentEvents.ServerSentEvent] = []
            let source = EventSource(configuration: EventSourceConfiguration(url: url, idleTimeout: nil),
                                     loop: loop, clock: ContinuousClock(), logger: quiet)
            _ = try await source.run({ update in
                if case .event(let event) = update { pending.append(event) }
            }, batchEnded: {
                guard !pending.isEmpty else { return }
                try ingest.journal(batch: pending)
                let committed = ContinuousClock.now
                wake.signal()
                for event in pending {
                    if let at = created.map.withLock({ $0[event.lastEventID] }) {
                        let elapsed = at.duration(to: committed)
                        latencies.append(Double(elapsed.components.seconds) * 1000
                                         + Double(elapsed.components.attoseconds) / 1e15)
                    }
                }
                if pending.last?.lastEventID == "\(total)" { source.stop() }
                pending.removeAll(keepingCapacity: true)
            })
            try await producer.value
            executorTask.cancel()
            await executorTask.value
            latencies.sort()
            let p50 = latencies[latencies.count / 2]
            let p99 = latencies[min(latencies.count - 1, latencies.count * 99 / 100)]
            report("creation → committed at 1,000 events/s (5 s)", "journaled per parser batch",
                   bytes: 0, seconds: 5, events: latencies.count,
                   note: "p50 \(format(p50, 2)) ms, p99 \(format(p99, 2)) ms, max \(format(latencies.last ?? 0, 2)) ms")
        }
    }
}

/// A fresh store in a temporary directory with the stream service, executor and wake signal
/// `orderlive run` builds around it. Only the stream service's journaling is used (the benchmark
/// drives the event source itself), so its session never logs in.
struct Pipeline {
    let directory = NSTemporaryDirectory() + "orderlive-bench-\(UUID().uuidString)"
    let store: OrderStore
    let ingest: StreamService
    let executor: SyncExecutor
    let wake = WakeSignal()

    init(loop: CurlLoop, eventsURL: String) throws {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        store = try OrderStore(path: directory + "/orderlive.sqlite")
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

    func remove() {
        try? FileManager.default.removeItem(atPath: directory)
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

// MARK: Main

print("orderlive benchmarks — release build, median of \(rounds) rounds, \(ProcessInfo.processInfo.activeProcessorCount) cores")
// BENCH_ONLY=parser, transport, store or ingest runs one part (for profiling).
let only = ProcessInfo.processInfo.environment["BENCH_ONLY"] ?? ""
if only == "" || only == "parser" { try await parserBenchmarks() }
if only == "" || only == "transport" {
    try await transportBenchmarks()
    try await reconnectMemory()
}
if only == "" || only == "store" {
    try await storeBenchmark()
    try await commitLatency()
}
if only == "" || only == "ingest" { try await ingestBenchmark() }
print("")
print("| case | reader | MB/s | events/s | note |")
print("| --- | --- | ---: | ---: | --- |")
for row in rows.withLock({ $0 }) {
    print("| \(row.name) | \(row.reader) | \(format(row.megabytesPerSecond, 0)) | \(format(row.eventsPerSecond, 0)) | \(row.note) |")
}
