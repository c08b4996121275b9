import Foundation
import OrderStore
import StoreModel
import Synchronization

// MARK: Group commit (issue 39, item 1)

/// Push batches and stream batches written into one store at once, as an agent that receives pushes
/// while its stream delivers: each source waits for its own commit before it sends the next batch,
/// as the push journal and the stream's pipeline do. The store's one writer with its default limit
/// against the same writer taking one caller's writes per transaction (the reference: every batch
/// its own commit, as before issue 39's item 1), alternated, same bytes, same run.
func groupCommitBenchmark() async throws {
    let seconds = Double(ProcessInfo.processInfo.environment["BENCH_GROUP_SECONDS"] ?? "") ?? 3
    let rounds = max(1, Int(ProcessInfo.processInfo.environment["BENCH_ROUNDS"] ?? "") ?? 2)
    print("")
    print("push batches (32 whole orders) and stream batches (100 whole orders) into one SQLite store at once, \(format(seconds, 0)) s each")
    print("| durability | round | writer | pushes/s | stream events/s | orders/s | transactions/s | callers' writes per transaction |")
    print("| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: |")
    for durability in [StoreDurability.normal, .full] {
        for round in 1...rounds {
            for limit in [1, GroupCommit.defaultLimit] {
                let result = try await mixedWrites(durability: durability, groupCommitLimit: limit, seconds: seconds)
                let name = limit == 1 ? "one caller per transaction (reference)" : "group commit, up to \(limit) (orderlive run)"
                print("| \(durability.rawValue) | \(round) | \(name) | \(format(Double(result.pushes) / result.seconds, 0)) "
                    + "| \(format(Double(result.events) / result.seconds, 0)) "
                    + "| \(format(Double(result.pushes + result.events) / result.seconds, 0)) "
                    + "| \(format(Double(result.transactions) / result.seconds, 0)) "
                    + "| \(format(Double(result.units) / Double(max(1, result.transactions)), 2)) |")
            }
        }
    }
}

private struct MixedResult {
    var pushes: Int
    var events: Int
    var transactions: Int
    var units: Int
    var seconds: Double
}

private func mixedWrites(durability: StoreDurability, groupCommitLimit: Int, seconds: Double) async throws -> MixedResult {
    let directory = NSTemporaryDirectory() + "orderlive-group-bench-\(UUID().uuidString)"
    try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: directory) }
    let store = try OrderStore(
        path: directory + "/orderlive.sqlite", durability: durability, immediateApply: ImmediateApply(),
        groupCommitLimit: groupCommitLimit)
    let policy = SubmissionPolicy(dedupeSince: 0, highWaterJobs: 10_000_000)
    let start = ContinuousClock.now
    let end = start + .milliseconds(Int(seconds * 1_000))
    async let pushed: Int = {
        var count = 0
        while ContinuousClock.now < end {
            let batch = (0..<32).map { index in
                let id = "p-\(count + index)"
                return IdempotentSubmission(
                    requestKey: nil,
                    parts: [.init(key: "n-\(id)", jobs: [wholeOrder(id)])], response: "{\"success\":\"ok\"}")
            }
            let outcomes = await store.accept(batch, policy: policy)
            count += outcomes.count { if case .accepted = $0 { true } else { false } }
        }
        return count
    }()
    async let streamed: Int = {
        var count = 0
        while ContinuousClock.now < end {
            let jobs = (0..<100).map { index in wholeOrder("s-\(count + index)") }
            try await (store as any JobJournal).journal(jobs, cursor: "event-\(count + 99)", deadLetters: [])
            count += jobs.count
        }
        return count
    }()
    let (pushes, events) = try await (pushed, streamed)
    let elapsed = ContinuousClock.now - start
    let statistics = store.writeStatistics
    let stored = try store.counts().orders
    precondition(stored == pushes + events, "stored \(stored) of \(pushes + events)")
    return MixedResult(
        pushes: pushes, events: events, transactions: statistics.transactions, units: statistics.units,
        seconds: Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18)
}

private func wholeOrder(_ id: String) -> NewJob {
    let body = "{\"id\":\"\(id)\",\"status\":\"picked_up\",\"version\":1,\"store_id\":1,\"courier_id\":7}"
    let order = OrderRecord(
        id: id, status: "picked_up", storeID: "1", courierID: "7", version: 1, updatedAt: nil, body: body, appliedAt: 1_000)
    return NewJob(kind: .upsert, orderID: id, order: order, source: "bench")
}
