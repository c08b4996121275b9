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

// Transport: curl loop to delivered events, against a count-only reference, and memory over reconnects.

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

/// A memory figure of `/proc/PID/status` (`VmRSS`, `VmHWM`), MB; of this process when `pid` is nil.
func residentMegabytes(_ field: String, of pid: pid_t? = nil) -> Double {
    let path = pid.map { "/proc/\($0)/status" } ?? "/proc/self/status"
    guard let status = try? String(contentsOfFile: path, encoding: .utf8) else { return 0 }
    for line in status.split(separator: "\n") where line.hasPrefix(field + ":") {
        let kilobytes = Double(line.split(separator: " ").dropFirst().first ?? "0") ?? 0
        return kilobytes / 1024
    }
    return 0
}

func resetPeakResident(of pid: pid_t? = nil) {
    // Linux ≥ 4.0: writing 5 to clear_refs resets VmHWM to the current RSS.
    if let handle = FileHandle(forWritingAtPath: pid.map { "/proc/\($0)/clear_refs" } ?? "/proc/self/clear_refs") {
        handle.write(Data("5".utf8))
        try? handle.close()
    }
}

/// The curl loop's delivery against `base`'s firehose: the count-only callback (reference), parsed
/// events delivered by EventSource, and the parser alone over the same bytes in memory.
/// `deliveryOnly` runs the EventSource row alone, for profiling it (`BENCH_ONLY=delivery`).
func transportRates(loop: CurlLoop, base: String, server: String, deliveryOnly: Bool = false) async throws {
    let blocks = 1_500
    let url = base + "/sandbox/firehose/\(blocks)"
    let eventsExpected = blocks * OrderFeed.firehoseEventsPerBlock
    let streamBytes = blocks * OrderFeed.firehoseBlock.count
    let name = "curl loop → consumer, \(streamBytes / 1_000_000) MB firehose, \(server)"

    let reference = try await measure(deliveryOnly ? 0 : rounds) {
        let delegate = CountingDelegate()
        _ = try loop.startStream(HTTPRequest(url: url, timeout: nil), delegate: delegate)
        await delegate.wait()
        return delegate.bytes.load(ordering: .relaxed)
    }
    precondition(reference.count == streamBytes)
    report(name, "count-only curl callback (reference)", bytes: streamBytes, seconds: reference.seconds, events: eventsExpected)

    /// `perEvent: false`: `runBatches`, one call per chunk, the events counted and their data left as
    /// bytes. `perEvent: true`: `run`, one call per event, each event's data read as a String.
    func deliver(perEvent: Bool) async throws -> (seconds: Double, count: Int) {
        try await measure(rounds) {
            var count = 0
            var dataBytes = 0
            let source = EventSource(
                configuration: EventSourceConfiguration(url: url, idleTimeout: nil, reconnects: false),
                loop: loop, clock: ContinuousClock(), logger: quiet)
            if perEvent {
                _ = try await source.run { update in
                    if case .event(let event) = update {
                        count += 1
                        dataBytes &+= event.data.utf8.count
                    }
                }
                return dataBytes == 0 ? 0 : count
            }
            _ = try await source.runBatches { update in
                if case .items(let items) = update {
                    for item in items {
                        if case .event = item { count += 1 }
                    }
                }
            }
            return count
        }
    }
    let delivered = try await deliver(perEvent: false)
    precondition(delivered.count == eventsExpected, "delivered \(delivered.count) of \(eventsExpected)")
    if deliveryOnly {
        report(name, "EventSource.runBatches, events counted", bytes: streamBytes, seconds: delivered.seconds,
               events: delivered.count)
        return
    }
    let deliveredAsStrings = try await deliver(perEvent: true)
    precondition(deliveredAsStrings.count == eventsExpected)

    var bytes: [UInt8] = []
    bytes.reserveCapacity(streamBytes)
    for _ in 0..<blocks { bytes += OrderFeed.firehoseBlock }
    let chunks = chunked(bytes, size: 16_384)
    let parsed = measureSync(rounds) { parseWithOurs(chunks) }
    precondition(parsed.count == eventsExpected)
    let batched = measureSync(rounds) { parseIntoBatches(chunks) }
    precondition(batched.count == eventsExpected)
    report(name, "EventSource.runBatches, events counted (data left as bytes)", bytes: streamBytes,
           seconds: delivered.seconds, events: delivered.count,
           note: "\(format(reference.seconds / delivered.seconds, 2))× of the reference; "
               + "\(format(parsed.seconds / delivered.seconds, 2))× of the parser in memory on the same bytes (goal ≥ 0.6×); "
               + "\(format(batched.seconds / delivered.seconds, 2))× of the parser into batches")
    report(name, "EventSource.run, a call per event, each event's data read as a String", bytes: streamBytes,
           seconds: deliveredAsStrings.seconds, events: deliveredAsStrings.count,
           note: "\(format(parsed.seconds / deliveredAsStrings.seconds, 2))× of the parser in memory")
    report(name, "ServerSentEventParser in memory, same bytes, 16 KiB chunks (a String per event)", bytes: streamBytes,
           seconds: parsed.seconds, events: parsed.count)
    report(name, "ServerSentEventParser in memory into batches, same chunks (data left as bytes)", bytes: streamBytes,
           seconds: batched.seconds, events: batched.count)
}

func transportBenchmarks(deliveryOnly: Bool = false) async throws {
    // The server in another process first (the measure: the loop, parser and consumer do not
    // share the process with the server), then in this process as before.
    let directory = NSTemporaryDirectory() + "orderlive-bench-transport-\(UUID().uuidString)"
    try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: directory) }
    let (child, childBase) = try await startBenchSandbox(orders: 1, log: directory + "/sandbox.log")
    defer { child.kill() }
    try await CurlLoop.withLoop(logger: quiet) { loop in
        try await transportRates(loop: loop, base: childBase, server: "Sandbox in its own process",
                                 deliveryOnly: deliveryOnly)
    }
    if deliveryOnly { return }

    try await Sandbox.withRunning { sandbox in
        let base = await sandbox.baseURL
        try await CurlLoop.withLoop(logger: quiet) { loop in
            try await transportRates(loop: loop, base: base, server: "Sandbox in this process")

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
            let elapsed = seconds(start.duration(to: .now))
            let after = residentMegabytes("VmRSS")
            report("1,000 reconnects (one 64 KiB block each)", "EventSource", bytes: count * OrderFeed.firehoseBlock.count,
                   seconds: elapsed, events: count * OrderFeed.firehoseEventsPerBlock,
                   note: "RSS \(format(before)) MB after 100 warm-up reconnects, \(format(after)) MB after 1,000 more")
        }
    }
}
