import OrderSync
import StoreModel
import TestKit
import Testing

/// The per-order lanes' rule (DESIGN §8 "Sync") on journals written by hand, at its edges.
@Suite(.timeLimit(.minutes(1))) struct JobLanesTests {
    /// A journaled job: `order` nil for a full sync; `waitsUntil` its retry time.
    static func job(
        _ id: Int64, _ kind: JobKind, order: String?, waitsUntil notBefore: Double = 0, attempts: Int = 0
    ) -> JobRecord {
        let local = kind == .upsert
        return JobRecord(
            id: id, kind: kind, orderID: order, version: nil, payload: local ? "{}" : nil, source: "test",
            attempts: attempts, notBefore: notBefore, lastError: nil, createdAt: 0, status: local ? "s" : nil)
    }

    static func choose(_ jobs: [JobRecord], now: Double = 100, paused: Bool = false, probeDue: Bool = false) -> JobLanes {
        var lanes = JobLanes(now: now, paused: paused, probeDue: probeDue)
        lanes.consider(jobs)
        return lanes
    }

    static func ids(_ choice: JobLanes.Choice) -> [Int64] {
        switch choice {
        case .nothing: []
        case .batch(let jobs): jobs.compactMap(\.id)
        case .single(let job, _): [job.id ?? -1]
        }
    }

    @Test func aHeadWaitingForItsRetryStepsAsideAndItsOrdersLaterJobsWaitBehindIt() {
        let journal = [
            Self.job(1, .fetch, order: "7", waitsUntil: 150, attempts: 2),
            Self.job(2, .upsert, order: "7"),
            Self.job(3, .fetch, order: "8"),
            Self.job(4, .upsert, order: "7"),
        ]
        let lanes = Self.choose(journal)
        #expect(Self.ids(lanes.choice) == [3], "order 8's fetch runs; order 7's upserts wait behind its fetch")
        #expect(lanes.soonestRetry == 150)
        // At its retry time, the head runs first, alone (it failed before).
        #expect(Self.ids(Self.choose(journal, now: 150).choice) == [1])
    }

    @Test func wholeOrderJobsOfOtherLanesBatchPastAWaitingLaneButStopAtAFetch() {
        let journal = [
            Self.job(1, .upsert, order: "1"),
            Self.job(2, .fetch, order: "2", waitsUntil: 500, attempts: 1),
            Self.job(3, .upsert, order: "3"),
            Self.job(4, .upsert, order: "2"),
            Self.job(5, .upsert, order: "4"),
            Self.job(6, .fetch, order: "5"),
            Self.job(7, .upsert, order: "6"),
        ]
        #expect(Self.ids(Self.choose(journal).choice) == [1, 3, 5])
        // The fetch goes alone once the upserts before it are done.
        #expect(Self.ids(Self.choose(Array(journal[5...])).choice) == [6])
        // A whole-order job that failed before goes alone too.
        let retried = [Self.job(1, .upsert, order: "1", attempts: 1), Self.job(2, .upsert, order: "2")]
        #expect(Self.ids(Self.choose(retried).choice) == [1])
    }

    @Test func aFullSyncRunsOnlyFirstAndNothingAfterItRunsBeforeIt() {
        let before = [
            Self.job(1, .fetch, order: "1", waitsUntil: 500, attempts: 1),
            Self.job(2, .fullSync, order: nil),
            Self.job(3, .upsert, order: "3"),
        ]
        let barred = Self.choose(before)
        #expect(barred.choice == .nothing, "the full sync waits for the job before it; the upsert after it waits for the full sync")
        #expect(barred.stoppedAtBarrier && barred.isDecided)
        #expect(Self.ids(Self.choose([Self.job(2, .fullSync, order: nil), Self.job(3, .upsert, order: "3")]).choice) == [2])
        // Jobs before a full sync run first, the ready ones of every lane.
        let mixed = [Self.job(1, .upsert, order: "1"), Self.job(2, .fullSync, order: nil), Self.job(3, .upsert, order: "2")]
        #expect(Self.ids(Self.choose(mixed).choice) == [1])
        // A full sync that waits for its retry holds everything after it.
        #expect(Self.choose([Self.job(1, .fullSync, order: nil, waitsUntil: 200), Self.job(2, .upsert, order: "2")]).choice == .nothing)
    }

    @Test func aJobWithoutAnOrderIsALaneOfItsOwn() {
        let journal = [Self.job(1, .fetch, order: nil, waitsUntil: 900, attempts: 3), Self.job(2, .fetch, order: nil)]
        #expect(Self.ids(Self.choose(journal).choice) == [2])
    }

    @Test func whileTheBackendIsUnavailableFetchesAreHeldAndOneProbeGoesOnceItIsDue() {
        let journal = [
            Self.job(1, .fetch, order: "1"),
            Self.job(2, .upsert, order: "1"),
            Self.job(3, .upsert, order: "2"),
            Self.job(4, .fetch, order: "3"),
            Self.job(5, .upsert, order: "4"),
        ]
        let paused = Self.choose(journal, paused: true, probeDue: false)
        #expect(Self.ids(paused.choice) == [3, 5], "whole orders need no backend; order 1's upsert waits behind its fetch")
        let probing = Self.choose(journal, paused: true, probeDue: true)
        #expect(probing.choice == .single(journal[0], probe: true))
        // Once the ready whole-order jobs before it are done, a due probe is the first fetch met.
        let later = Self.choose([Self.job(3, .upsert, order: "2"), Self.job(4, .fetch, order: "3")], paused: true, probeDue: true)
        #expect(Self.ids(later.choice) == [3])
        #expect(Self.choose([Self.job(4, .fetch, order: "3")], paused: false).choice == .single(Self.job(4, .fetch, order: "3"), probe: false))
        // A full sync at the head is held too, and holds what is behind it.
        #expect(Self.choose([Self.job(1, .fullSync, order: nil), Self.job(2, .upsert, order: "2")], paused: true).choice == .nothing)
    }

    @Test func aLaneLongerThanOneReadIsReadPast() {
        var lanes = JobLanes(now: 100, paused: false, probeDue: false)
        let blocked = (1...600).map { Self.job(Int64($0), .upsert, order: "7", waitsUntil: $0 == 1 ? 200 : 0) }
        lanes.consider(blocked.prefix(512))
        #expect(!lanes.isDecided && lanes.lastSeen == 512)
        lanes.consider(blocked.dropFirst(512) + [Self.job(601, .upsert, order: "8")])
        #expect(Self.ids(lanes.choice) == [601])
    }

    /// Over random journals: whatever is chosen is a lane's next job (no job of its order before it
    /// is left behind), nothing is chosen after a full sync but the full sync as the first job, no
    /// waiting job is chosen, and something is chosen whenever some lane's head is ready.
    @Test(arguments: 0..<40)
    func randomJournalsChooseOnlyLaneHeadsInJournalOrder(_ seed: Int) {
        var random = SplitMix(state: UInt64(seed))
        let count = 1 + Int(random.next() % 40)
        var journal: [JobRecord] = []
        var waitingOrders = Set<String>()
        for id in 1...count {
            let roll = random.next() % 20
            let order = "\(random.next() % 6)"
            let kind: JobKind = roll == 0 ? .fullSync : (roll < 8 ? .fetch : .upsert)
            let isHead = !journal.contains { $0.orderID == order }
            let waits = kind != .fullSync && isHead && random.next() % 3 == 0
            if waits { waitingOrders.insert(order) }
            journal.append(Self.job(Int64(id), kind, order: kind == .fullSync ? nil : order, waitsUntil: waits ? 500 : 0))
        }
        let paused = random.next() % 3 == 0
        let lanes = Self.choose(journal, paused: paused, probeDue: random.next() % 2 == 0)
        let chosen = Self.ids(lanes.choice)
        let barrier = journal.firstIndex { $0.kind == .fullSync }
        for id in chosen {
            guard let index = journal.firstIndex(where: { $0.id == id }) else { continue }
            let job = journal[index]
            #expect(job.notBefore <= 100, "seed \(seed): a waiting job was chosen")
            if let barrier { #expect(index < barrier || (index == 0 && barrier == 0), "seed \(seed): chosen past a full sync") }
            for earlier in journal[..<index] where earlier.orderID == job.orderID && job.kind != .fullSync {
                #expect(chosen.contains(earlier.id ?? -1), "seed \(seed): job \(id) chosen before job \(earlier.id ?? -1) of its order")
            }
        }
        // Liveness: the first job that no rule holds is chosen.
        let candidates = journal.first?.kind == .fullSync ? Array(journal.prefix(1)) : Array(journal.prefix { $0.kind != .fullSync })
        let free = candidates.first { job in
            let index = journal.firstIndex(of: job) ?? 0
            let headOfLane = !journal[..<index].contains { $0.orderID == job.orderID && job.kind != .fullSync }
            return headOfLane && job.notBefore <= 100 && (!paused || job.isLocal)
        }
        if let free { #expect(!chosen.isEmpty, "seed \(seed): job \(free.id ?? -1) could run but nothing was chosen") }
    }
}
