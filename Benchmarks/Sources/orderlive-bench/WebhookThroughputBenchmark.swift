// Outgoing webhooks at the speed of the receiver (issue 59, DESIGN §9): a receiver that answers every
// request after 50 ms (the bare NIO server in a process of its own, BENCH_RECEIVER_DELAY_MS=50), and
// a backlog of changes in a SQLite store delivered by the deliverer the agent runs. The reference on
// the same store and receiver is today's default, one change per request and one in flight, whose
// ceiling is one change per round trip; the budget rows are against max_in_flight / 50 ms.

import AsyncSignals
import CurlHTTP
import Foundation
import Logging
import SQLiteStore
import StoreModel
import WebhookDelivery

#if canImport(Glibc)
import Glibc
#endif

/// One row: how many changes, with which options, and what was measured.
private struct WebhookRun {
    var label: String
    var changes: Int
    var options: WebhookDeliveryOptions
}

func webhookThroughputBenchmark() async throws {
    let delay = Int(ProcessInfo.processInfo.environment["BENCH_WEBHOOK_DELAY_MS"] ?? "") ?? 50
    say("== outgoing webhooks against a receiver answering after \(delay) ms (issue 59) ==")
    setenv("BENCH_RECEIVER_DELAY_MS", "\(delay)", 1)
    let log = FileManager.default.temporaryDirectory.appendingPathComponent("orderlive-bench-slowhook-\(getpid()).log").path
    let receiver = try BenchAgent(executable: benchExecutable, arguments: ["webhook-receiver"], log: log)
    unsetenv("BENCH_RECEIVER_DELAY_MS")
    defer { receiver.kill() }
    guard await receiver.wait(for: "webhook receiver listening on port", timeout: .seconds(60)) != nil,
          let port = receiver.line(containing: "webhook receiver listening on port")?.split(separator: " ").last.flatMap({ Int($0) })
    else { throw BenchFailure("the slow webhook receiver did not start: \(receiver.tail())") }
    let url = "http://127.0.0.1:\(port)/hook"
    let runs = [
        WebhookRun(label: "reference: 1 in flight, 1 change a request (today's default)", changes: 100, options: WebhookDeliveryOptions()),
        WebhookRun(label: "32 in flight, 1 change a request", changes: 4_000, options: WebhookDeliveryOptions(maxInFlight: 32)),
        WebhookRun(label: "8 in flight, batches of 100", changes: 40_000, options: WebhookDeliveryOptions(maxInFlight: 8, batchSize: 100)),
        WebhookRun(label: "1 in flight, batches of 100", changes: 10_000, options: WebhookDeliveryOptions(batchSize: 100)),
    ]
    for run in runs {
        let (seconds, cpu) = try await deliver(run, to: url)
        let rate = Double(run.changes) / seconds
        let requests = Double(run.changes) / Double(run.options.batchSize)
        let ceiling = Double(run.options.maxInFlight) * Double(run.options.batchSize) * 1_000 / Double(delay)
        say("\(run.label): \(run.changes) changes in \(format(seconds, 2)) s = \(format(rate, 0)) changes/s "
            + "(\(format(requests / seconds, 0)) requests/s; \(format(rate / ceiling, 2))× of max_in_flight × batch_size / \(delay) ms "
            + "= \(format(ceiling, 0))/s; agent CPU \(format(cpu * 1e6 / Double(run.changes), 1)) µs/change)")
    }
}

/// Delivers `run.changes` changes made beforehand in a new store to `url` with `run.options`; the
/// wall time from the deliverer's start until the endpoint's cursor reached the head, and the CPU
/// the process spent meanwhile.
private func deliver(_ run: WebhookRun, to url: String) async throws -> (seconds: Double, cpu: Double) {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("orderlive-bench-hooks-\(UUID().uuidString)").path
    try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: directory) }
    let store = try SQLiteOrderStore(path: directory + "/orderlive.sqlite")
    let endpoint = try await store.addWebhookEndpoint(NewWebhookEndpoint(
        url: url, secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", options: run.options))
    // Orders of 500 ids, each changed several times: parallel delivery has orders to spread over.
    var version: [Int: Int64] = [:]
    for start in stride(from: 0, to: run.changes, by: 500) {
        let page = (start..<min(start + 500, run.changes)).map { index -> OrderRecord in
            let id = index % 500
            version[id, default: 0] += 1
            let current = version[id] ?? 1
            return OrderRecord(id: "\(id)", status: "v\(current)", storeID: "1", courierID: nil, version: current, updatedAt: nil,
                               body: #"{"id":\#(id),"status":"v\#(current)","version":\#(current),"store_id":1}"#, appliedAt: 0)
        }
        try store.applyPage(page)
    }
    let head = try store.changeHead()
    let loop = try CurlLoop(logger: Logger(label: "bench.hooks", factory: { _ in SwiftLogNoOpLogHandler() }))
    let changed = WakeSignal()
    let deliverer = WebhookDeliverer(
        store: store, loop: loop, settings: WebhookSettings(), changed: changed,
        logger: Logger(label: "bench.hooks", factory: { _ in SwiftLogNoOpLogHandler() }))
    let clock = ContinuousClock()
    let cpu = processCPUSeconds()
    let started = clock.now
    let task = Task { await deliverer.run() }
    while try store.webhookEndpoints().first(where: { $0.id == endpoint.id })?.cursor ?? 0 < head {
        guard clock.now - started < .seconds(300) else { break }
        try await Task.sleep(for: .milliseconds(20))
    }
    let took = clock.now - started
    let spent = processCPUSeconds() - cpu
    task.cancel()
    await task.value
    await loop.shutdown()
    return (Double(took.components.seconds) + Double(took.components.attoseconds) / 1e18, spent)
}
