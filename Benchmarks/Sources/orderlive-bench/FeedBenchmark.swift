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
import OrderStore
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

// MARK: The load generator (a process of its own)

/// What one event loop's subscribers have seen since the last reset. Each shard is touched by the
/// connections of one event loop, and by the reporting thread between phases, under its mutex.
struct FeedShardState {
    var deliveries = LatencyHistogram()
    var perChange: [Int64: (count: Int, latest: Int64)] = [:]
    var firstDelivery: Int64 = .max
    var lastDelivery: Int64 = 0
    var ready = 0
    var cutOff = 0
    var ended = 0
}

final class FeedShard: Sendable {
    let state = Mutex(FeedShardState())
}

/// One subscriber: sends the request, decodes the chunked response and scans the SSE body's bytes
/// for what the benchmark needs, no more: each live event's `data: {"seq":N` line and the
/// `"bench_ns":T` in it, the `ready` event (the one data line with a seq and no order) and
/// `overflow`. A full parse with a String per field cost the load generator twice the agent's CPU,
/// so the figures measured the client. It runs on its channel's event loop only.
final class FeedSubscriberHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPClientResponsePart
    typealias OutboundOut = HTTPClientRequestPart

    private static let seqMarker = Array(#"data: {"seq":"#.utf8)
    private static let benchMarker = Array(#""bench_ns":"#.utf8)
    private static let overflowMarker = Array("event: overflow".utf8)

    private let shard: FeedShard
    private var carry: [UInt8] = []
    private var isReady = false
    private var sawOverflow = false

    init(shard: FeedShard) {
        self.shard = shard
    }

    func channelActive(context: ChannelHandlerContext) {
        var head = HTTPRequestHead(version: .http1_1, method: .GET, uri: "/v1/orders/stream")
        head.headers.add(name: "Host", value: "127.0.0.1")
        head.headers.add(name: "Accept", value: "text/event-stream")
        context.write(wrapOutboundOut(.head(head)), promise: nil)
        context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
        context.fireChannelActive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head:
            break
        case .body(let buffer):
            let now = monotonicNanoseconds()
            var latencies: [(seq: Int64, nanoseconds: Int64)] = []
            var becameReady = false
            var bytes = carry
            bytes.append(contentsOf: buffer.readableBytesView)
            bytes.withUnsafeBytes { raw in
                var consumed = 0
                var position = 0
                while let start = Self.find(Self.seqMarker, in: raw, from: position) {
                    guard let lineEnd = Self.find([0x0A], in: raw, from: start) else {
                        consumed = start  // the line is not complete yet: keep it for the next read
                        position = raw.count
                        break
                    }
                    let seq = Self.number(in: raw, at: start + Self.seqMarker.count)
                    if let bench = Self.find(Self.benchMarker, in: raw, from: start), bench < lineEnd {
                        if isReady, let seq, let sent = Self.number(in: raw, at: bench + Self.benchMarker.count) {
                            latencies.append((seq, now - sent))
                        }
                    } else if !isReady {
                        isReady = true
                        becameReady = true
                    }
                    consumed = lineEnd + 1
                    position = lineEnd + 1
                }
                if Self.find(Self.overflowMarker, in: raw, from: 0) != nil { sawOverflow = true }
                if position >= raw.count, consumed < raw.count, Self.find(Self.seqMarker, in: raw, from: consumed) == consumed {
                    carry = Array(raw[consumed...])
                } else {
                    carry = Array(raw[max(consumed, raw.count - Self.overflowMarker.count + 1)...])
                }
            }
            if latencies.isEmpty && !becameReady { return }
            shard.state.withLock { state in
                if becameReady { state.ready += 1 }
                for (seq, nanoseconds) in latencies {
                    state.deliveries.record(microseconds: nanoseconds / 1_000)
                    let previous = state.perChange[seq] ?? (0, 0)
                    state.perChange[seq] = (previous.count + 1, max(previous.latest, nanoseconds))
                }
                if !latencies.isEmpty {
                    state.firstDelivery = min(state.firstDelivery, now)
                    state.lastDelivery = max(state.lastDelivery, now)
                }
            }
        case .end:
            context.close(promise: nil)
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        let overflow = sawOverflow
        shard.state.withLock { state in
            state.ended += 1
            if overflow { state.cutOff += 1 }
        }
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }

    /// Where `pattern` first occurs in `bytes` at or after `from`.
    static func find(_ pattern: [UInt8], in bytes: UnsafeRawBufferPointer, from: Int) -> Int? {
        guard from < bytes.count, let base = bytes.baseAddress else { return nil }
        // memchr for the first byte, then a comparison (memmem is not in Swift's Glibc module).
        var index = from
        while index + pattern.count <= bytes.count {
            guard let hit = memchr(base + index, Int32(pattern[0]), bytes.count - index - pattern.count + 1) else { return nil }
            let start = base.distance(to: UnsafeRawPointer(hit))
            if pattern.withUnsafeBytes({ needle in needle.baseAddress.map { memcmp(base + start, $0, pattern.count) } }) == 0 {
                return start
            }
            index = start + 1
        }
        return nil
    }

    /// The decimal digits at `at`, nil when there are none (or they run past the end).
    static func number(in bytes: UnsafeRawBufferPointer, at: Int) -> Int64? {
        var index = at
        var value: Int64 = 0
        while index < bytes.count, bytes[index] >= 0x30, bytes[index] <= 0x39, value < Int64.max / 10 - 9 {
            value = value * 10 + Int64(bytes[index] - 0x30)
            index += 1
        }
        return index > at && index < bytes.count ? value : nil
    }
}

/// Reads nothing, ever: the stalled subscriber. Its receive buffer is 4 KiB, so the agent's writes
/// stop soon; the agent must cut it off without slowing anyone else.
final class StalledSubscriberHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    func channelActive(context: ChannelHandlerContext) {
        let request = "GET /v1/orders/stream HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n\r\n"
        context.writeAndFlush(wrapOutboundOut(ByteBuffer(string: request)), promise: nil)
        context.fireChannelActive()
    }
}

/// Raises this process's soft open-file limit to its hard limit (the client holds one descriptor
/// per subscriber).
func raiseOpenFileLimit() {
    var limit = rlimit()
    guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return }
    limit.rlim_cur = limit.rlim_max
    _ = setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
}

/// One line to the driver, unbuffered (its standard output is a pipe).
func say(_ text: String) {
    FileHandle.standardOutput.write(Data((text + "\n").utf8))
}

/// `orderlive-bench feed-client PORT SUBSCRIBERS STALLED`: connects, prints `ready N SECONDS` once
/// every reading subscriber has its `ready`, then answers `reset` and `report` lines on standard
/// input with one JSON line each; `quit` (or the end of input) ends it.
func feedClient(port: Int, subscribers: Int, stalled: Int) throws {
    raiseOpenFileLimit()
    let group = MultiThreadedEventLoopGroup(numberOfThreads: System.coreCount)
    var shards: [ObjectIdentifier: FeedShard] = [:]
    var loops = group.makeIterator()
    while let loop = loops.next() { shards[ObjectIdentifier(loop)] = FeedShard() }
    let allShards = Array(shards.values)
    let shardOf = shards
    let bootstrap = ClientBootstrap(group: group)
        .channelOption(.socketOption(.tcp_nodelay), value: 1)
        .channelInitializer { channel in
            guard let shard = shardOf[ObjectIdentifier(channel.eventLoop)] else {
                return channel.eventLoop.makeFailedFuture(ChannelError.inappropriateOperationForState)
            }
            return channel.eventLoop.makeCompletedFuture {
                try channel.pipeline.syncOperations.addHTTPClientHandlers()
                try channel.pipeline.syncOperations.addHandler(FeedSubscriberHandler(shard: shard))
            }
        }
    let stalledBootstrap = ClientBootstrap(group: group)
        .channelOption(.socketOption(.so_rcvbuf), value: 4_096)
        .channelOption(.autoRead, value: false)
        .channelInitializer { channel in
            channel.eventLoop.makeCompletedFuture { try channel.pipeline.syncOperations.addHandler(StalledSubscriberHandler()) }
        }
    var held: [any Channel] = []
    for _ in 0..<stalled {
        held.append(try stalledBootstrap.connect(host: "127.0.0.1", port: port).wait())
    }
    let started = monotonicNanoseconds()
    func readyCount() -> Int { allShards.reduce(0) { sum, shard in sum + shard.state.withLock { $0.ready } } }
    // At most 256 connections between connect and `ready`, so the listen backlog never overflows.
    var connected = 0
    while connected < subscribers {
        while connected < subscribers, connected - readyCount() < 256 {
            held.append(try bootstrap.connect(host: "127.0.0.1", port: port).wait())
            connected += 1
        }
        usleep(1_000)
    }
    while readyCount() < subscribers { usleep(1_000) }
    say("ready \(readyCount()) \(format(Double(monotonicNanoseconds() - started) / 1e9, 2))")

    while let line = readLine() {
        let words = line.split(separator: " ")
        switch words.first {
        case "reset":
            for shard in allShards {
                shard.state.withLock { state in
                    state.deliveries = LatencyHistogram()
                    state.perChange = [:]
                    state.firstDelivery = .max
                    state.lastDelivery = 0
                }
            }
            say("ok")
        case "report":
            var deliveries = LatencyHistogram()
            var perChange: [Int64: (count: Int, latest: Int64)] = [:]
            var first = Int64.max, last = Int64(0), cutOff = 0, ended = 0
            for shard in allShards {
                shard.state.withLock { state in
                    deliveries.merge(state.deliveries)
                    for (seq, value) in state.perChange {
                        let previous = perChange[seq] ?? (0, 0)
                        perChange[seq] = (previous.count + value.count, max(previous.latest, value.latest))
                    }
                    first = min(first, state.firstDelivery)
                    last = max(last, state.lastDelivery)
                    cutOff += state.cutOff
                    ended += state.ended
                }
            }
            let open = subscribers - ended
            var toAll = LatencyHistogram()
            for (_, value) in perChange where value.count >= open { toAll.record(microseconds: value.latest / 1_000) }
            let seconds = last > first ? Double(last - first) / 1e9 : 0
            let fields: [String: Any] = [
                "deliveries": deliveries.total, "changes": perChange.count, "changes_to_all": toAll.total,
                "open": open, "cut_off": cutOff, "ended": ended,
                "deliveries_per_second": seconds > 0 ? Double(deliveries.total) / seconds : 0,
                "delivery_p50_ms": deliveries.milliseconds(at: 0.5), "delivery_p99_ms": deliveries.milliseconds(at: 0.99),
                "delivery_max_ms": Double(deliveries.maximum) / 1_000,
                "all_p50_ms": toAll.milliseconds(at: 0.5), "all_p99_ms": toAll.milliseconds(at: 0.99),
                "all_max_ms": Double(toAll.maximum) / 1_000,
                "client_rss_mb": residentMegabytes("VmRSS"),
            ]
            let data = (try? JSONSerialization.data(withJSONObject: fields, options: [.sortedKeys])) ?? Data()
            say(String(decoding: data, as: UTF8.self))
        default:
            for channel in held { channel.close(promise: nil) }
            try group.syncShutdownGracefully()
            return
        }
        }
    for channel in held { channel.close(promise: nil) }
    try group.syncShutdownGracefully()
}

// MARK: The agent side

/// The load generator, started and spoken to over its standard input and output.
final class FeedClientProcess {
    private let process = Process()
    private let input = Pipe()
    private let output = Pipe()
    private var buffer = Data()

    init(port: Int, subscribers: Int, stalled: Int) throws {
        process.executableURL = URL(fileURLWithPath: CommandLine.arguments[0])
        process.arguments = ["feed-client", "\(port)", "\(subscribers)", "\(stalled)"]
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
    configuration.upstream.baseURL = "http://127.0.0.1:1"
    // Errors only: with no backend the stream service's reconnect warnings would fill the report.
    var logger = Logger(label: "orderlive") { JSONLogHandler(label: $0) }
    logger.logLevel = .error
    let program = try AgentBuilder.build(configuration: configuration, logger: logger, environment: [:])
    guard let server = program.apiServer else { return }
    // Twenty orders in the store: each subscriber's snapshot.
    // The benchmark's configuration keeps the default SQLite engine, whose writes the committer calls directly.
    guard let store = program.store as? OrderStore else { return }
    try store.applyPage(try (0..<20).map { try benchOrder($0, version: 1, status: "created") })
    let running = Task { try await program.run(handlingSignals: false) }
    let port = await server.port
    let committer = Committer(store: store, orders: 20)
    print("")
    print("change feed: \(subscribers) subscribers on one agent (load generator: feed-client, its own process on SwiftNIO, \(System.coreCount) event loops)")
    print("| subscribers | phase | changes committed | changes/s | deliveries | deliveries/s | per delivery p50 / p99 / max ms | to every subscriber p50 / p99 / max ms | cut off | agent RSS MB |")
    print("| --- | --- | ---: | ---: | ---: | ---: | --- | --- | ---: | ---: |")
    var pacedP99: [Int: Double] = [:]
    for stalled in [0, 1] {
        let before = residentMegabytes("VmRSS")
        let client = try FeedClientProcess(port: port, subscribers: subscribers, stalled: stalled)
        let ready = client.line()
        let held = residentMegabytes("VmRSS")
        let perSubscriber = (held - before) * 1_024 / Double(subscribers)
        print("| \(subscribers)\(stalled > 0 ? " + 1 stalled" : "") | connected (\(ready)) | — | — | — | — | — | — | — "
            + "| \(format(before, 0)) → \(format(held, 0)): \(format(perSubscriber, 1)) KB per subscriber |")
        let phases = [("10 changes/s", 10, pacedSeconds), ("100 changes/s", 100, 3), ("as fast as the store commits", 0, 2)]
        for (phase, rate, seconds) in phases.prefix(phaseCount) {
            client.send("reset")
            _ = client.line()
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
            if rate == 10 { pacedP99[stalled] = number("delivery_p99_ms") }
            print("| \(subscribers)\(stalled > 0 ? " + 1 stalled" : "") | \(phase) | \(committed) | \(format(Double(committed) / seconds, 0)) "
                + "| \(Int(number("deliveries"))) | \(format(number("deliveries_per_second"), 0)) "
                + "| \(format(number("delivery_p50_ms"), 2)) / \(format(number("delivery_p99_ms"), 2)) / \(format(number("delivery_max_ms"), 1)) "
                + "| \(format(number("all_p50_ms"), 2)) / \(format(number("all_p99_ms"), 2)) / \(format(number("all_max_ms"), 1)) "
                + "(\(Int(number("changes_to_all"))) of \(Int(number("changes"))) changes) "
                + "| \(Int(number("cut_off"))) | \(format(residentMegabytes("VmRSS"), 0)) |")
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
    await program.shutdown()
    try await running.value
}

/// Commits order changes as the executor does: one transaction each, on a thread of its own (the
/// executor's is a dedicated thread too), at `rate` per second or, with rate 0, back to back.
final class Committer: Sendable {
    private let store: OrderStore
    private let versions: Mutex<[Int]>
    private static let statuses = ["assigned", "picked_up", "delivering", "delivered", "created"]

    init(store: OrderStore, orders: Int) {
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
