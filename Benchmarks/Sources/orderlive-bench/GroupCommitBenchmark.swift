import Foundation
import SQLiteStore
import StoreModel
import Synchronization

// MARK: Group commit (issue 39, item 1)

/// Push batches and stream batches written into one store at once, as an agent that receives pushes
/// while its stream delivers: each source waits for its own commit before it sends the next batch,
/// as the push journal and the stream's pipeline do. Twice: as `orderlive run` stores whole orders
/// into an empty journal (applied in the transaction that takes them: two writers), and with every
/// job journaled and the executor applying them (three writers: what happens while the journal is
/// not empty, during a full sync or behind a failed job). The store's one writer grouping what is
/// pending, against the same writer taking one caller's writes per transaction (the reference:
/// every batch its own commit, as before issue 39's item 1), alternated, same bytes, same run. `LD_PRELOAD` of a library that lengthens
/// `fdatasync` stands for a slower disk (docs/PERFORMANCE.md says how).
func groupCommitBenchmark() async throws {
    let seconds = Double(ProcessInfo.processInfo.environment["BENCH_GROUP_SECONDS"] ?? "") ?? 3
    let rounds = max(1, Int(ProcessInfo.processInfo.environment["BENCH_ROUNDS"] ?? "") ?? 2)
    print("")
    print("push batches (32 whole orders) and stream batches (100 whole orders) into one SQLite store at once, \(format(seconds, 0)) s each")
    print("| jobs | durability | round | writer | pushes/s | stream events/s | orders stored/s | transactions/s | callers' writes per transaction |")
    print("| --- | --- | ---: | --- | ---: | ---: | ---: | ---: | ---: |")
    for journaling in [false, true] {
        for durability in [StoreDurability.normal, .full] {
            for round in 1...rounds {
                let standard = GroupCommit.Grouping.standard(for: durability)
                let writers: [(String, GroupCommit.Grouping)] = [
                    ("one caller per transaction (reference)", .never), ("grouped, up to 64", .always(limit: 64)),
                ]
                for (described, grouping) in writers {
                    let name = described + (grouping == standard ? ", as orderlive run" : "")
                    let result = try await mixedWrites(
                        durability: durability, journaling: journaling, grouping: grouping, seconds: seconds)
                    print("| \(journaling ? "journaled, the executor applies" : "applied as taken") | \(durability.rawValue) | \(round) "
                        + "| \(name) | \(format(Double(result.pushes) / result.seconds, 0)) "
                        + "| \(format(Double(result.events) / result.seconds, 0)) "
                        + "| \(format(Double(result.pushes + result.events) / result.seconds, 0)) "
                        + "| \(format(Double(result.transactions) / result.seconds, 0)) "
                        + "| \(format(Double(result.units) / Double(max(1, result.transactions)), 2)) |")
                }
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

/// `seconds` of both sources, then (`journaling`) until the executor has applied every job: the
/// rates are orders stored in the whole time.
private func mixedWrites(
    durability: StoreDurability, journaling: Bool, grouping: GroupCommit.Grouping, seconds length: Double
) async throws -> MixedResult {
    let directory = NSTemporaryDirectory() + "orderlive-group-bench-\(UUID().uuidString)"
    try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: directory) }
    let store = try SQLiteOrderStore(
        path: directory + "/orderlive.sqlite", durability: durability, immediateApply: journaling ? nil : ImmediateApply(),
        grouping: grouping)
    let policy = SubmissionPolicy(dedupeSince: 0, highWaterJobs: 10_000_000)
    let start = ContinuousClock.now
    let end = start + .milliseconds(Int(length * 1_000))
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
    let producing = Atomic<Int>(2)
    // On a thread of its own, as the agent's executor runs (`ThreadTaskExecutor`).
    async let appliedJobs: Int = withCheckedThrowingContinuation { continuation in
        Thread {
            continuation.resume(with: Result {
                var count = 0
                while journaling {
                    let jobs = try store.headJobs(limit: 512)
                    if jobs.isEmpty {
                        if producing.load(ordering: .acquiring) == 0 { break }
                        // The agent's executor waits for a wake-up; a tenth of a millisecond's nap stands for it.
                        usleep(100)
                        continue
                    }
                    count += try store.applyInOneTransaction(jobs)
                }
                return count
            })
        }.start()
    }
    let pushes = await pushed
    producing.subtract(1, ordering: .releasing)
    let events = try await streamed
    producing.subtract(1, ordering: .releasing)
    let applied = try await appliedJobs
    precondition(!journaling || applied == pushes + events, "applied \(applied) of \(pushes + events)")
    let elapsed = ContinuousClock.now - start
    let statistics = store.writeStatistics
    let stored = try store.counts().orders
    precondition(stored == pushes + events, "stored \(stored) of \(pushes + events)")
    return MixedResult(
        pushes: pushes, events: events, transactions: statistics.transactions, units: statistics.units,
        seconds: seconds(elapsed))
}

private func wholeOrder(_ id: String) -> NewJob {
    let body = "{\"id\":\"\(id)\",\"status\":\"picked_up\",\"version\":1,\"store_id\":1,\"courier_id\":7}"
    let order = OrderRecord(
        id: id, status: "picked_up", storeID: "1", courierID: "7", version: 1, updatedAt: nil, body: body, appliedAt: 1_000)
    return NewJob(kind: .upsert, orderID: id, order: order, source: "bench")
}
