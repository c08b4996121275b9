// orderlive benchmarks: every figure next to a reference measured in the same run on the same bytes
// (DESIGN §9). Release builds only: `make bench`.

import AsyncSignals
import AuthSession
import CurlHTTP
import EventStream
import Foundation
import Logging
import OpenAPIRuntime
import SQLiteStore
import StoreModel
import OrderSync
import Sandbox
import ServerSentEvents
import Synchronization

let rounds = Int(ProcessInfo.processInfo.environment["BENCH_ROUNDS"] ?? "") ?? 5
let quiet = Logger(label: "bench", factory: { _ in SwiftLogNoOpLogHandler() })

// MARK: Measurement

/// A duration in seconds.
func seconds(_ duration: Duration) -> Double {
    Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
}

/// This executable, which the benchmarks start again in other roles (`sandbox`, `agent`, …).
let benchExecutable = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]

/// Median wall time of `rounds` runs; `body` returns a count that is checked to stay the same.
func measure(_ rounds: Int, _ body: () async throws -> Int) async rethrows -> (seconds: Double, count: Int) {
    var times: [Double] = []
    var count = 0
    for _ in 0..<max(1, rounds) {
        let start = ContinuousClock.now
        count = try await body()
        times.append(seconds(start.duration(to: .now)))
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
        times.append(seconds(start.duration(to: .now)))
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

/// The same through batches, as EventSource parses: one batch per chunk, the data left as bytes.
func parseIntoBatches(_ chunks: [ArraySlice<UInt8>]) -> Int {
    var parser = ServerSentEventParser()
    var events = 0
    for chunk in chunks {
        var batch = ServerSentEventBatch(reservingBytes: chunk.count, items: chunk.count / 128 + 4)
        chunk.withUnsafeBytes { raw in parser.parse(raw, into: &batch) }
        for item in batch {
            if case .event = item { events += 1 }
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

// MARK: Main

// The feed benchmark's load generator is this executable again, in a process of its own.
if (5...6).contains(CommandLine.arguments.count), CommandLine.arguments[1] == "feed-client",
   let port = Int(CommandLine.arguments[2]), let subscribers = Int(CommandLine.arguments[3]), let stalled = Int(CommandLine.arguments[4]) {
    let http2Connections = CommandLine.arguments.count == 6 ? Int(CommandLine.arguments[5]) ?? 0 : 0
    try feedClient(port: port, subscribers: subscribers, stalled: stalled, http2Connections: http2Connections)
    exit(0)
}

print("orderlive benchmarks — release build, median of \(rounds) rounds, \(ProcessInfo.processInfo.activeProcessorCount) cores")
// `orderlive-bench agent …`: one agent of the PostgreSQL failover benchmark, in its own process.
if CommandLine.arguments.count > 1, CommandLine.arguments[1] == "agent" {
    try await runBenchAgent(Array(CommandLine.arguments.dropFirst(2)))
    exit(0)
}
// `orderlive-bench sandbox …` and `coldstart-agent …`: the cold-start benchmark's two processes.
if CommandLine.arguments.count > 1, CommandLine.arguments[1] == "sandbox" {
    try await runBenchSandbox(Array(CommandLine.arguments.dropFirst(2)))
    exit(0)
}
if CommandLine.arguments.count > 1, CommandLine.arguments[1] == "webhook-receiver" {
    try await runBenchWebhookReceiver()
    exit(0)
}
if CommandLine.arguments.count > 1, CommandLine.arguments[1] == "memory-agent" {
    try await runMemoryAgent(Array(CommandLine.arguments.dropFirst(2)))
    exit(0)
}
if CommandLine.arguments.count > 1, CommandLine.arguments[1] == "coldstart-agent" {
    try await runColdStartAgent(Array(CommandLine.arguments.dropFirst(2)))
    exit(0)
}

// BENCH_ONLY=parser, transport, store, ingest, feed, scope, coldstart, memory, postgres or webhooks runs one part (for profiling);
// BENCH_ONLY=group only the store part's group-commit table;
// BENCH_ONLY=delivery only the transport's EventSource row against the Sandbox in its own process.
let only = ProcessInfo.processInfo.environment["BENCH_ONLY"] ?? ""
if only == "delivery" { try await transportBenchmarks(deliveryOnly: true) }
if only == "" || only == "parser" { try await parserBenchmarks() }
if only == "" || only == "transport" {
    try await transportBenchmarks()
    try await reconnectMemory()
}
if only == "" || only == "store" {
    try await storeBenchmark()
    try await commitLatency()
    try await groupCommitBenchmark()
}
if only == "group" { try await groupCommitBenchmark() }
if only == "" || only == "ingest" { try await ingestBenchmark() }
if only == "" || only == "feed" { try await feedBenchmark() }
if only == "" || only == "scope" { try await scopeBenchmark() }
if only == "" || only == "coldstart" { try await coldStartBenchmark() }
if only == "" || only == "memory" { try await memoryBenchmark() }
if only == "" || only == "postgres" { try await postgresBenchmark() }
if only == "" || only == "webhooks" { try await webhookThroughputBenchmark() }
print("")
print("| case | reader | MB/s | events/s | note |")
print("| --- | --- | ---: | ---: | --- |")
for row in rows.withLock({ $0 }) {
    print("| \(row.name) | \(row.reader) | \(format(row.megabytesPerSecond, 0)) | \(format(row.eventsPerSecond, 0)) | \(row.note) |")
}
