// With BENCH_WEBHOOK=1 the ingest and change-feed benchmarks run the agent with one enabled outgoing
// webhook endpoint (issue 40): a bare NIO receiver answering 200, in a process of its own
// (`orderlive-bench webhook-receiver`), so the agent's CPU figures hold only the agent's side of each
// delivery. The figures with and without it are in PERFORMANCE.md.

import Agent
import Foundation
import Hummingbird
import Logging
import StoreModel

#if canImport(Glibc)
import Glibc
#endif

/// True when the benchmarks add one webhook endpoint.
var benchWebhookEnabled: Bool { ProcessInfo.processInfo.environment["BENCH_WEBHOOK"] == "1" }

/// The ingest benchmark's agent rows without and with an endpoint: `BENCH_WEBHOOK=both` runs each row
/// both ways, one after the other in the same round, so the two are compared on the same machine state;
/// without first in odd rounds and with first in even ones, so neither always runs second.
func benchWebhookVariants(round: Int) -> [Bool] {
    guard ProcessInfo.processInfo.environment["BENCH_WEBHOOK"] == "both" else { return [benchWebhookEnabled] }
    return round % 2 == 1 ? [false, true] : [true, false]
}

/// `orderlive-bench webhook-receiver`: answers 200 to every POST until killed, from a bare NIO handler
/// (15-18 µs of CPU per request here, half of a bare Hummingbird server's), so the receiver, which
/// shares the machine's two cores with the agent and wrk, takes as little of them as it can.
///
/// It runs under SCHED_IDLE (its threads inherit it from the one that starts them): it stands for a
/// receiver on another machine, as every real one is. At the agent's priority it took about 13 % of a
/// core from the pushes under load (39 µs a request at the 3.4 k deliveries/s made during a saturating
/// burst) and at nice 19 still about 5 %, which is no cost of the agent's. The agent's own side of a
/// delivery is what the rows measure: its CPU, and the throughput it leaves the pushes.
func runBenchWebhookReceiver() async throws {
    #if canImport(Glibc)
    // BENCH_RECEIVER_PRIORITY=idle (the default), nice (19) or normal.
    switch ProcessInfo.processInfo.environment["BENCH_RECEIVER_PRIORITY"] ?? "idle" {
    case "normal":
        break
    case "nice":
        _ = setpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0, 19)
    default:
        var parameter = sched_param()
        // SCHED_IDLE is 5 (Glibc's module leaves the GNU constant out); refused, the receiver runs at nice 19.
        if sched_setscheduler(0, 5, &parameter) != 0 { _ = setpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0, 19) }
    }
    #endif
    try await withBareNIOServer { port in
        say("webhook receiver listening on port \(port)")
        while true { try await Task.sleep(for: .seconds(3600)) }
    }
}

/// Starts the receiver's process and adds it as an endpoint of `program`'s store; nil unless `enabled`.
func addBenchWebhook(to program: AgentProgram, enabled: Bool = benchWebhookEnabled) async throws -> BenchAgent? {
    guard enabled else { return nil }
    let log = FileManager.default.temporaryDirectory.appendingPathComponent("orderlive-bench-hook-\(getpid()).log").path
    // BENCH_WEBHOOK_DELAY_MS: the receiver answers after this long (a slow receiver, issue 59); set for
    // its process only, so the bare NIO reference rows of the same run keep answering at once.
    let environment = ProcessInfo.processInfo.environment
    if let delay = environment["BENCH_WEBHOOK_DELAY_MS"] { setenv("BENCH_RECEIVER_DELAY_MS", delay, 1) }
    defer { unsetenv("BENCH_RECEIVER_DELAY_MS") }
    let receiver = try BenchAgent(executable: benchExecutable, arguments: ["webhook-receiver"], log: log)
    guard await receiver.wait(for: "webhook receiver listening on port", timeout: .seconds(60)) != nil,
          let port = receiver.line(containing: "webhook receiver listening on port")?.split(separator: " ").last.flatMap({ Int($0) })
    else {
        receiver.kill()
        throw BenchFailure("the webhook receiver did not start: \(receiver.tail())")
    }
    // BENCH_WEBHOOK_IN_FLIGHT and BENCH_WEBHOOK_BATCH: the endpoint's max_in_flight and batch_size.
    let options = WebhookDeliveryOptions(
        maxInFlight: Int(environment["BENCH_WEBHOOK_IN_FLIGHT"] ?? "") ?? 1, batchSize: Int(environment["BENCH_WEBHOOK_BATCH"] ?? "") ?? 1)
    _ = try await program.store.addWebhookEndpoint(NewWebhookEndpoint(
        url: "http://127.0.0.1:\(port)/hook", secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", options: options))
    return receiver
}

/// What the load left to do once it ended: jobs journaled but not yet applied and, with an endpoint,
/// changes not yet delivered. Waits (polling every 100 ms, up to 300 s) until every job is applied and
/// the endpoint's cursor is at the head, and says how long that took and what CPU it cost per request
/// of the load, so work that waited (deliveries yield the processor to pushes) is still counted.
func settled(_ store: any OrderStoreEngine, requests: Int, webhook: Bool) async throws -> String {
    let clock = ContinuousClock()
    let ended = clock.now
    let cpu = processCPUSeconds()
    func owed() async throws -> (jobs: Int, changes: Int64) {
        let jobs = try await store.counts().journalDepth
        guard webhook else { return (jobs, 0) }
        let head = try await store.changeHead()
        return (jobs, head - (try await store.webhookEndpoints().first?.cursor ?? head))
    }
    let atEnd = try await owed()
    var left = atEnd
    while left.jobs > 0 || left.changes > 0, clock.now - ended < .seconds(300) {
        try await Task.sleep(for: .milliseconds(100))
        left = try await owed()
    }
    let took = clock.now - ended
    let seconds = Double(took.components.seconds) + Double(took.components.attoseconds) / 1e18
    let perRequest = (processCPUSeconds() - cpu) * 1e6 / Double(max(1, requests))
    let owedText = webhook ? "\(atEnd.jobs) jobs and \(atEnd.changes) deliveries owed" : "\(atEnd.jobs) jobs owed"
    let outcome = left.jobs > 0 || left.changes > 0 ? "still owed after 300 s" : "done \(format(seconds, 1)) s later"
    return "; \(owedText) at the end, \(outcome) (+\(format(perRequest, 1)) µs CPU/request)"
}
