// The local change feed under load (issue 14, DESIGN §9 and §11). The agent is built exactly as
// `orderlive run` builds it (AgentBuilder) in this process, so its RSS is this process's; the load
// generator is this same executable started again as `orderlive-bench feed-client`, a second process
// on SwiftNIO that holds every subscriber on two event loops and scans each stream's bytes for the
// few fields it measures. Changes are committed here one transaction each (as the executor commits them) with the
// monotonic time of the commit's start inside the order; the client reads that time back from every
// delivered event, so "committed → delivered" is measured across the two processes on one clock
// (CLOCK_MONOTONIC is system-wide).

import Agent
import Foundation
import Logging
import NIOCore
import NIOHTTP1
import NIOPosix
import SQLiteStore
import StoreModel
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// CLOCK_MONOTONIC in nanoseconds: the same clock in the agent and in the client process.
func monotonicNanoseconds() -> Int64 {
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    return Int64(now.tv_sec) * 1_000_000_000 + Int64(now.tv_nsec)
}

/// A latency histogram in microseconds with buckets 2 % wide (1 µs to over 100 s).
struct LatencyHistogram: Sendable {
    private static let growth = 1.02
    private(set) var counts = [Int](repeating: 0, count: 1_000)
    private(set) var total = 0
    private(set) var maximum: Int64 = 0

    mutating func record(microseconds: Int64) {
        let value = max(1, microseconds)
        let bucket = min(counts.count - 1, Int(log(Double(value)) / log(Self.growth)))
        counts[bucket] += 1
        total += 1
        maximum = max(maximum, value)
    }

    mutating func merge(_ other: LatencyHistogram) {
        for index in counts.indices { counts[index] += other.counts[index] }
        total += other.total
        maximum = max(maximum, other.maximum)
    }

    /// The value at `quantile` (0...1), in milliseconds, to the bucket's upper edge.
    func milliseconds(at quantile: Double) -> Double {
        guard total > 0 else { return 0 }
        let rank = max(1, Int((Double(total) * quantile).rounded(.up)))
        var seen = 0
        for (bucket, count) in counts.enumerated() {
            seen += count
            if seen >= rank { return min(Double(maximum), pow(Self.growth, Double(bucket + 1))) / 1_000 }
        }
        return Double(maximum) / 1_000
    }
}

// MARK: The agent side

/// The load generator, started and spoken to over its standard input and output.
final class FeedClientProcess {
    private let process = Process()
    private let input = Pipe()
    private let output = Pipe()
    private var buffer = Data()

    init(port: Int, subscribers: Int, stalled: Int, requests: String? = nil, http2Connections: Int = 0) throws {
        process.executableURL = URL(fileURLWithPath: CommandLine.arguments[0])
        process.arguments = ["feed-client", "\(port)", "\(subscribers)", "\(stalled)", "\(http2Connections)"]
        if let requests {
            process.environment = ProcessInfo.processInfo.environment.merging(["BENCH_FEED_REQUESTS": requests]) { $1 }
        }
        process.standardInput = input
        process.standardOutput = output
        try process.run()
    }

    /// The next line it prints (blocking: the benchmark's driver waits for it).
    func line() -> String {
        while true {
            if let newline = buffer.firstIndex(of: 0x0A) {
                let text = String(decoding: buffer[buffer.startIndex..<newline], as: UTF8.self)
                buffer.removeSubrange(buffer.startIndex...newline)
                return text
            }
            let chunk = output.fileHandleForReading.availableData
            if chunk.isEmpty { return "" }
            buffer.append(chunk)
        }
    }

    func send(_ command: String) {
        input.fileHandleForWriting.write(Data((command + "\n").utf8))
    }

    func report() -> [String: Any] {
        send("report")
        let text = line()
        return (try? JSONSerialization.jsonObject(with: Data(text.utf8))) as? [String: Any] ?? [:]
    }

    func finish() {
        send("quit")
        process.waitUntilExit()
    }
}

/// One realistic order of about 450 bytes, its commit's start time inside.
func benchOrder(_ id: Int, version: Int, status: String) throws -> OrderRecord {
    let text = """
        {"id":"ord-\(id)","status":"\(status)","version":\(version),"store_id":"store-\(id % 12)","courier_id":"courier-\(id % 40)",\
        "updated_at":"2026-11-23T10:00:00Z","customer":{"name":"Customer \(id)","phone":"+4930\(100_000 + id)",\
        "address":"Torstraße \(id % 200), 10119 Berlin"},"items":[{"sku":"pizza-margherita","qty":2,"price_cents":950},\
        {"sku":"tiramisu","qty":1,"price_cents":650},{"sku":"water-0.5","qty":3,"price_cents":180}],"total_cents":3090,\
        "notes":"ring twice","bench_ns":\(monotonicNanoseconds())}
        """
    return try OrderRecord.decode(text: text, appliedAt: Date().timeIntervalSince1970)
}

func feedBenchmark() async throws {
    let subscribers = Int(ProcessInfo.processInfo.environment["BENCH_FEED_SUBSCRIBERS"] ?? "") ?? 10_000
    let pacedSeconds = Int(ProcessInfo.processInfo.environment["BENCH_FEED_SECONDS"] ?? "") ?? 10
    // BENCH_FEED_PHASES=1 runs only the paced phase (10 changes/s), 2 adds 100/s: quicker runs while profiling.
    let phaseCount = min(3, max(1, Int(ProcessInfo.processInfo.environment["BENCH_FEED_PHASES"] ?? "") ?? 3))
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("orderlive-feed-bench-\(UUID().uuidString)").path
    defer { try? FileManager.default.removeItem(atPath: directory) }
    var configuration = OrderliveConfiguration()
    configuration.store.stateDirectory = directory
    configuration.ingest.listen = ""
    configuration.api.listen = "127.0.0.1:0"
    configuration.api.maximumSubscribers = subscribers + 100
    // The HTTP/2 pass (issue 57): the same subscribers as streams over BENCH_FEED_HTTP2_CONNECTIONS
    // connections (100; 0 skips it), h2c with prior knowledge.
    let http2Connections = max(0, Int(ProcessInfo.processInfo.environment["BENCH_FEED_HTTP2_CONNECTIONS"] ?? "") ?? 100)
    configuration.api.http2.cleartext = true
    configuration.api.http2.maximumStreamsPerConnection = max(100, (subscribers + max(1, http2Connections) - 1) / max(1, http2Connections))
    configuration.upstream.baseURL = "http://127.0.0.1:1"
    // Errors only: with no backend the stream service's reconnect warnings would fill the report.
    var logger = Logger(label: "orderlive") { JSONLogHandler(label: $0) }
    logger.logLevel = .error
    let program = try AgentBuilder.build(configuration: configuration, logger: logger, environment: [:])
    guard let server = program.apiServer else { return }
    // Twenty orders in the store: each subscriber's snapshot.
    // The benchmark's configuration keeps the default SQLite engine, whose writes the committer calls directly.
    guard let store = program.store as? SQLiteOrderStore else { return }
    try store.applyPage(try (0..<20).map { try benchOrder($0, version: 1, status: "created") })
    let webhook = try await addBenchWebhook(to: program)
    defer { webhook?.kill() }
    let running = Task { try await program.run(handlingSignals: false) }
    let port = await server.port
    let committer = Committer(store: store, orders: 20)
    print("")
    print("change feed: \(subscribers) subscribers on one agent (load generator: feed-client, its own process on SwiftNIO, \(System.coreCount) event loops)")
    print("| subscribers | phase | changes committed | changes/s | deliveries | deliveries/s | per delivery p50 / p99 / max ms | to every subscriber p50 / p99 / max ms | cut off | agent RSS MB | agent CPU µs per delivery |")
    print("| --- | --- | ---: | ---: | ---: | ---: | --- | --- | ---: | ---: | ---: |")
    var pacedP99: [Int: Double] = [:]
    // The first pass's RSS growth is the clean figure (later passes reuse what the allocator kept):
    // BENCH_FEED_HTTP2_FIRST=1 runs the HTTP/2 pass first, to measure its memory per subscriber.
    let http2First = ProcessInfo.processInfo.environment["BENCH_FEED_HTTP2_FIRST"] == "1"
    let http2Pass = http2Connections > 0 ? [(0, http2Connections)] : []
    let passes = http2First ? http2Pass + [(0, 0), (1, 0)] : [(0, 0), (1, 0)] + http2Pass
    for (stalled, connections) in passes {
        let label = "\(subscribers)\(stalled > 0 ? " + 1 stalled" : "")\(connections > 0 ? " h2 streams on \(connections) connections" : "")"
        let before = residentMegabytes("VmRSS")
        let client = try FeedClientProcess(port: port, subscribers: subscribers, stalled: stalled, http2Connections: connections)
        let ready = client.line()
        let held = residentMegabytes("VmRSS")
        let perSubscriber = (held - before) * 1_024 / Double(subscribers)
        print("| \(label) | connected (\(ready)) | — | — | — | — | — | — | — "
            + "| \(format(before, 0)) → \(format(held, 0)): \(format(perSubscriber, 1)) KB per subscriber | — |")
        let phases = [("10 changes/s", 10, pacedSeconds), ("100 changes/s", 100, 3), ("as fast as the store commits", 0, 2)]
        for (phase, rate, seconds) in phases.prefix(phaseCount) {
            client.send("reset")
            _ = client.line()
            let cpuBefore = processCPUSeconds()
            let (committed, seconds) = await committer.run(rate: rate, seconds: seconds)
            // Let the last deliveries arrive: until the count stops growing for a second (at most
            // two minutes: a backlog beyond that is reported as it stands).
            var previous = -1
            var report = client.report()
            let settleBy = ContinuousClock.now.advanced(by: .seconds(120))
            while (report["deliveries"] as? Int ?? 0) != previous, ContinuousClock.now < settleBy {
                previous = report["deliveries"] as? Int ?? 0
                try await Task.sleep(for: .seconds(1))
                report = client.report()
            }
            func number(_ key: String) -> Double { (report[key] as? Double) ?? Double(report[key] as? Int ?? 0) }
            let cpuPerDelivery = (processCPUSeconds() - cpuBefore) * 1e6 / max(1, number("deliveries"))
            if rate == 10, connections == 0 { pacedP99[stalled] = number("delivery_p99_ms") }
            if rate == 10, connections > 0 { pacedP99[-1] = number("delivery_p99_ms") }
            print("| \(label) | \(phase) | \(committed) | \(format(Double(committed) / seconds, 0)) "
                + "| \(Int(number("deliveries"))) | \(format(number("deliveries_per_second"), 0)) "
                + "| \(format(number("delivery_p50_ms"), 2)) / \(format(number("delivery_p99_ms"), 2)) / \(format(number("delivery_max_ms"), 1)) "
                + "| \(format(number("all_p50_ms"), 2)) / \(format(number("all_p99_ms"), 2)) / \(format(number("all_max_ms"), 1)) "
                + "(\(Int(number("changes_to_all"))) of \(Int(number("changes"))) changes) "
                + "| \(Int(number("cut_off"))) | \(format(residentMegabytes("VmRSS"), 0)) | \(format(cpuPerDelivery, 1)) |")
        }
        client.finish()
        // The agent frees a gone subscriber's place when it sees the connection close; wait until every
        // one is freed, or some of the next round's subscribers would get 503.
        var remaining = server.hub.subscriberCount
        while remaining > 0 {
            let now = await server.hub.subscriberCountChange(from: remaining, within: .seconds(60))
            if now == remaining { break }
            remaining = now
        }
    }
    if let without = pacedP99[0], let with = pacedP99[1], without > 0 {
        print("one stalled subscriber: the others' p99 per delivery at 10 changes/s is \(format(with, 2)) ms against \(format(without, 2)) ms without it "
            + "(\(format((with / without - 1) * 100, 1)) %)")
    }
    if let http1 = pacedP99[0], let http2 = pacedP99[-1], http1 > 0 {
        print("HTTP/2 streams against HTTP/1.1 connections: p99 per delivery at 10 changes/s \(format(http2, 2)) ms against \(format(http1, 2)) ms "
            + "(\(format((http2 / http1 - 1) * 100, 1)) %)")
    }
    await program.shutdown()
    try await running.value
}

/// This process's CPU time (user and system, every thread), in seconds.
func processCPUSeconds() -> Double {
    var usage = rusage()
    guard getrusage(Int32(RUSAGE_SELF.rawValue), &usage) == 0 else { return 0 }
    func seconds(_ time: timeval) -> Double { Double(time.tv_sec) + Double(time.tv_usec) / 1e6 }
    return seconds(usage.ru_utime) + seconds(usage.ru_stime)
}

/// Commits order changes as the executor does: one transaction each, on a thread of its own (the
/// executor's is a dedicated thread too), at `rate` per second or, with rate 0, back to back.
final class Committer: Sendable {
    private let store: SQLiteOrderStore
    private let versions: Mutex<[Int]>
    private static let statuses = ["assigned", "picked_up", "delivering", "delivered", "created"]

    init(store: SQLiteOrderStore, orders: Int) {
        self.store = store
        versions = Mutex([Int](repeating: 1, count: orders))
    }

    /// Returns how many changes were committed and the seconds it took.
    func run(rate: Int, seconds: Int) async -> (committed: Int, seconds: Double) {
        await withCheckedContinuation { continuation in
            Thread.detachNewThread { [self] in
                let start = monotonicNanoseconds()
                let end = start + Int64(seconds) * 1_000_000_000
                var committed = 0
                while true {
                    if rate > 0 {
                        guard committed < rate * seconds else { break }
                        let due = start + Int64(committed) * 1_000_000_000 / Int64(rate)
                        let wait = due - monotonicNanoseconds()
                        if wait > 0 { usleep(UInt32(wait / 1_000)) }
                    } else if monotonicNanoseconds() >= end {
                        break
                    }
                    commit(committed)
                    committed += 1
                }
                continuation.resume(returning: (committed, Double(monotonicNanoseconds() - start) / 1e9))
            }
        }
    }

    private func commit(_ index: Int) {
        let (id, version) = versions.withLock { versions in
            let id = index % versions.count
            versions[id] += 1
            return (id, versions[id])
        }
        do {
            _ = try store.applyUpsert(try benchOrder(id, version: version, status: Self.statuses[version % Self.statuses.count]))
        } catch {
            FileHandle.standardError.write(Data("feed benchmark: a commit failed: \(error)\n".utf8))
        }
    }
}
