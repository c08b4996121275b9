import AsyncSignals
import Foundation
import Logging
import SQLiteStore
import StoreModel
import PostgresStore
import TestHarnesses
import TestKit
import Testing

/// One leader per account (DESIGN §12): two agents' leaderships on one account, the leader's
/// connection killed by the server, the follower taking over with the next epoch, the old leader's
/// work stopped at once and its late writes refused by the fence.
@Suite(.timeLimit(.minutes(5))) struct PostgresLeadershipTests {
    struct Seen: Sendable {
        var agent: String
        var status: PostgresLeadership.Status
    }

    @Test func whenTheLeadersConnectionDiesTheFollowerTakesOverWithTheNextEpochAndTheOldLeaderIsFenced() async throws {
        let server = try await PostgresServer.running()
        let database = try await server.database()
        let logger = quietLogger
        try await withPostgresStore(server: server, database: database, account: "acme") { first in
            try await withPostgresStore(server: server, database: database, account: "acme") { second in
                let (events, seen) = AsyncStream<Seen>.makeStream()
                let leading = Locked<[String: Int]>([:])
                func leadership(_ store: PostgresOrderStore, _ name: String) -> PostgresLeadership {
                    PostgresLeadership(store: store, name: name, logger: logger) { seen.yield(Seen(agent: name, status: $0)) }
                }
                let agents = ["a": leadership(first, "a"), "b": leadership(second, "b")]
                // `stops` keeps an agent from taking part again; `dones` ends its work as leader.
                let stops = ["a": StopFlag(), "b": StopFlag()]
                let dones = ["a": StopFlag(), "b": StopFlag()]
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for (name, agent) in agents {
                        let stop = stops[name] ?? StopFlag()
                        group.addTask {
                            await agent.run(until: stop) {
                                leading.withLock { $0[name, default: 0] += 1 }
                                // Leads until cancelled (its connection failed) or the test ends.
                                let ended = OneShot<Bool>()
                                dones[name]?.onStop { _ = ended.give(true) }
                                _ = await withTaskCancellationHandler {
                                    await ended.value
                                } onCancel: {
                                    _ = ended.give(false)
                                }
                                leading.withLock { $0[name, default: 0] -= 1 }
                            }
                        }
                    }
                    defer { group.cancelAll() }
                    var iterator = events.makeAsyncIterator()
                    var leader: Seen?
                    while leader == nil, let event = await iterator.next() {
                        if event.status.role == .leader { leader = event }
                    }
                    let old = try #require(leader)
                    let oldEpoch = try #require(old.status.epoch)
                    let follower = old.agent == "a" ? "b" : "a"
                    let oldStore = old.agent == "a" ? first : second
                    #expect(try await oldStore.applyUpsert(try order(1, version: 1), completing: nil) == .applied)
                    // The old leader will not try again; the server ends its leadership connection.
                    stops[old.agent]?.stop()
                    let started = ContinuousClock.now
                    let killed = try await server.psql(
                        """
                        SELECT COUNT(pg_terminate_backend(pid)) FROM pg_locks WHERE locktype = 'advisory' AND granted
                        AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
                        """,
                        database: database)
                    #expect(killed == "1", "exactly one agent held the leadership lock")
                    var takeover: Seen?
                    var stepDown: Seen?
                    while takeover == nil || stepDown == nil, let event = await iterator.next() {
                        if event.agent == follower, event.status.role == .leader { takeover = event }
                        if event.agent == old.agent, event.status.role == .follower { stepDown = event }
                    }
                    let elapsed = ContinuousClock.now - started
                    #expect(takeover?.status.epoch == oldEpoch + 1)
                    #expect(elapsed < .seconds(5), "the follower takes over within failover_s (5 s): took \(elapsed)")
                    #expect(leading.withLock { $0[old.agent] } == 0, "the old leader's work stopped when it stepped down")
                    await #expect(throws: FencedOut.self) {
                        try await oldStore.applyUpsert(try order(1, status: "delivered", version: 2), completing: nil)
                    }
                    let newStore = old.agent == "a" ? second : first
                    #expect(try await newStore.applyUpsert(try order(1, status: "delivered", version: 2), completing: nil) == .applied)
                    #expect(try await server.psql(
                        "SELECT epoch || ' ' || leader FROM orderlive_leadership WHERE account = 'acme'", database: database)
                        == "\(oldEpoch + 1) \(follower)")
                    stops[follower]?.stop()
                    for flag in dones.values { flag.stop() }
                }
            }
        }
    }
}
