import AsyncSignals
import Foundation
import Logging
import OrderSync
import StoreModel
import TestHarnesses
import TestKit
import Testing

/// DESIGN §8 "Sync" over random interleavings, on both engines: a random journal of whole-order
/// upserts and fetches for a few orders, fetches that fail for their own order a scripted number of
/// times, and outages of the whole backend coming and going while the clock moves in random steps.
/// Whatever the interleaving, each order's changes land in its journal order (the upserts carry no
/// version, so the last write wins and a reordering would show), an order's failures count only its
/// own script (never an outage), and the store converges to the one result each lane alone gives.
@Suite(.timeLimit(.minutes(5))) struct SyncLanesPropertyTests {
    /// The backend: each fetch of an order answers as that order's script says (fail, then serve),
    /// unless the whole backend is down, which consumes nothing of any script.
    final class ScriptedBackend: OrderSource {
        struct State {
            var scripts: [String: [Bool]] = [:]  // true = this fetch fails for the order's own reason
            var down = false
            var served = 0
        }

        let state = Locked(State())

        func fetchOrder(id: String) async throws(SyncError) -> OrderRecord? {
            let answer = state.withLock { state -> Result<Int, SyncError> in
                if state.down { return .failure(SyncError("GET order \(id) answered HTTP 503", unavailable: true)) }
                let fails = state.scripts[id]?.isEmpty == false ? state.scripts[id]?.removeFirst() ?? false : false
                if fails { return .failure(SyncError("GET order \(id) answered HTTP 500", unavailable: true)) }
                state.served += 1
                return .success(state.served)
            }
            switch answer {
            case .failure(let error): throw error
            case .success(let served):
                do {
                    return try order(id, status: "fetched-\(served)")
                } catch {
                    throw SyncError("unreadable: \(error)")
                }
            }
        }

        func fetchPage(cursor: String?, limit: Int) async throws(SyncError) -> (orders: [OrderRecord], next: String?) {
            if state.withLock({ $0.down }) { throw SyncError("GET orders answered HTTP 503", unavailable: true) }
            return ([], nil)
        }
    }

    /// One lane alone: the statuses its jobs leave, in order (a fetch as "fetched"), and whether its
    /// fetches become dead letters, given its script and the attempts allowed.
    static func laneAlone(_ jobs: [String], script: [Bool], maximumAttempts: Int) -> (statuses: [String], deadLetters: Int) {
        var script = script[...]
        var statuses: [String] = []
        var deadLetters = 0
        for job in jobs {
            guard job == "fetch" else {
                statuses.append(job)
                continue
            }
            var attempts = 0
            while script.first == true {
                script = script.dropFirst()
                attempts += 1
                if attempts >= maximumAttempts { break }
            }
            if attempts >= maximumAttempts {
                deadLetters += 1
            } else {
                script = script.dropFirst()
                statuses.append("fetched")
            }
        }
        return (statuses, deadLetters)
    }

    @Test(arguments: StoreEngine.allCases, 0..<6)
    func everyOrderLandsInItsJournalOrderAndOutagesCountNothing(_ engine: StoreEngine, _ seed: Int) async throws {
        var random = SplitMix(state: UInt64(seed) &* 7919 &+ 17)
        let wall = WallClock(start: 1_000)
        let maximumAttempts = 3
        let orders = (1...5).map { "\($0)" }
        // The journal, written in three bursts; each order's script of failures.
        var bursts: [[NewJob]] = []
        var lanes: [String: [String]] = [:]
        var written = 0
        for _ in 0..<3 {
            var burst: [NewJob] = []
            for _ in 0..<(4 + Int(random.next() % 8)) {
                let id = orders[Int(random.next() % UInt64(orders.count))]
                written += 1
                // At most one fetch per order: a fetch journaled while another of its order is pending
                // collapses into it, which only the executor's timing would decide.
                if random.next() % 3 == 0, lanes[id]?.contains("fetch") != true {
                    burst.append(NewJob(kind: .fetch, orderID: id, source: "test"))
                    lanes[id, default: []].append("fetch")
                } else {
                    burst.append(NewJob(kind: .upsert, order: try order(id, status: "u\(written)"), source: "test"))
                    lanes[id, default: []].append("u\(written)")
                }
            }
            bursts.append(burst)
        }
        let backend = ScriptedBackend()
        backend.state.withLock { state in
            for id in orders { state.scripts[id] = (0..<6).map { _ in random.next() % 3 == 0 } }
        }
        let scripts = backend.state.withLock { $0.scripts }
        try await withStore(engine, now: { wall.now }) { store in
            let executor = SyncExecutor(
                store: store, source: backend,
                configuration: .init(maximumAttempts: maximumAttempts, retryBase: .seconds(1), retryMaximum: .seconds(4),
                                     probeMaximum: .seconds(2)),
                now: { wall.now }, random: { 0.5 }, logger: quietLogger)
            let start = try await store.changeHead()
            var pending = bursts[...]
            for step in 0..<400 {
                if let burst = pending.first, step % 7 == 0 {
                    try await store.journal(burst, cursor: nil, deadLetters: [])
                    pending = pending.dropFirst()
                }
                if step % 11 == 0 { backend.state.withLock { $0.down = random.next() % 2 == 0 } }
                if step > 300 { backend.state.withLock { $0.down = false } }
                _ = try await executor.runReadyJobs()
                wall.advance(by: Double(random.next() % 2_500) / 1_000)
                if pending.isEmpty, step > 300, try await store.counts().journalDepth == 0 { break }
            }
            #expect(try await store.counts().journalDepth == 0, "seed \(seed): the journal drains once the backend is back")
            var landed: [String: [String]] = [:]
            for change in try await store.appendedChanges(after: start, limit: 10_000) where change.kind == .upserted {
                let status = change.after?.status ?? ""
                landed[change.orderID, default: []].append(status.hasPrefix("fetched-") ? "fetched" : status)
            }
            var deadLetters = 0
            for id in orders {
                let alone = Self.laneAlone(lanes[id] ?? [], script: scripts[id] ?? [], maximumAttempts: maximumAttempts)
                #expect(landed[id] ?? [] == alone.statuses, "seed \(seed), order \(id): \(lanes[id] ?? [])")
                deadLetters += alone.deadLetters
            }
            #expect(try await store.deadLetters().count == deadLetters, "seed \(seed): only an order's own failures count")
        }
    }
}
