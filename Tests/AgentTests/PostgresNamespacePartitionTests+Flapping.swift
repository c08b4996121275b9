import AsyncSignals
import CurlHTTP
import Foundation
import Sandbox
import Testing
import TestHarnesses
import TestKit

#if canImport(Glibc)
import Glibc
#endif

extension PostgresNamespacePartitionTests {
    /// The leader's database link flaps for a minute: blackholed for 2 to 5 s, healed for 2 to 4 s,
    /// each time on whichever agent leads then, while the Sandbox changes orders and a sender pushes
    /// to any agent, again to another on a refusal. No split brain: each epoch was led by one agent,
    /// no job was applied twice, one agent leads at the end with the epoch the database holds. No
    /// push lost: every push was accepted in the end and every acknowledged one is kept; the store
    /// ends equal to the Sandbox.
    @Test func aFlappingDatabaseLinkGivesNoSplitBrainAndLosesNoPush() async throws {
        try await Self.withCluster("nsflap", account: "depot-61", failover: 3) { cluster in
            try await Self.flapping(cluster, for: .seconds(60))
        }
    }

    static func flapping(_ cluster: Cluster, for duration: Duration) async throws {
        let book = cluster.sandbox.orders
        let ids = (0..<8).map { _ in book.create() }
        let loop = try CurlLoop(logger: quietLogger)
        let http = AgentHTTP(loop: loop)
        let first = try await cluster.start(0)
        _ = try #require(await first.logs.wait(message: leads))
        let agents = [first, try await cluster.start(1), try await cluster.start(2)]
        let sender = FlappingSender(loop: loop, book: book, orders: ids, agents: agents)
        let clock = ContinuousClock()
        let start = clock.now
        let pushing = Task { try await sender.run(until: start + duration) }
        var random = SplitMix(state: 0x00F1_A991)
        var cuts = 0
        while clock.now - start < duration {
            // Whichever agent leads now (the database says, by its pid) loses its database link.
            let leader = try await cluster.server.psql(
                "SELECT leader FROM orderlive_leadership WHERE account = '\(cluster.account)'", database: cluster.database)
            let pid = leader.split(separator: ":").last.flatMap { Int32($0) }
            let index = agents.firstIndex { $0.child.process.processIdentifier == pid } ?? 0
            try cluster.lab.blackhole(cluster.databaseLinks[index])
            cuts += 1
            try await Task.sleep(for: .milliseconds(2_000 + Int(random.next() % 3_000)))
            try cluster.lab.heal(cluster.databaseLinks[index])
            try await Task.sleep(for: .milliseconds(2_000 + Int(random.next() % 2_000)))
        }
        let (pushes, accepted) = try await pushing.value
        #expect(accepted.count == pushes, "every push is accepted in the end: \(accepted.count) of \(pushes), after \(cuts) cuts")

        // Healed for good: one agent leads, every agent is ready.
        var roles: [String] = []
        for agent in agents {
            var role = ""
            for _ in 0..<120 where role.isEmpty {
                if let ready = try? await http.get(agent.url + "/readyz"), ready.status == 200 {
                    role = ready.body.contains(#""role":"leader""#) ? "leader" : "follower"
                } else {
                    try await Task.sleep(for: .milliseconds(250))
                }
            }
            roles.append(role)
        }
        #expect(roles.filter { $0 == "leader" }.count == 1 && roles.filter { $0 == "follower" }.count == 2, "\(roles)")

        // No split brain: each epoch was taken by one agent.
        let taken = agents.flatMap { agent in
            agent.logs.lines.filter { $0["message"] == leads }.compactMap { $0["cluster.epoch"].flatMap { Int($0) } }
        }
        #expect(Set(taken).count == taken.count, "an epoch led by two agents: \(taken.sorted())")
        let epoch = try #require(taken.max())
        #expect(epoch >= 3, "the leadership moved with the cuts: epochs \(taken.sorted()) after \(cuts) cuts")
        let leaderIndex = try #require(roles.firstIndex(of: "leader"))
        let upstream = book.snapshot.mapValues(\.status)
        let (stored, depth) = try await PostgresFailoverTests.converge(
            server: cluster.server, database: cluster.database, account: cluster.account, to: upstream,
            leaderLogs: agents[leaderIndex].logs)
        let differing = upstream.filter { stored[$0.key] != $0.value }.map { "\($0.key): \(stored[$0.key] ?? "none") not \($0.value)" }
        #expect(stored == upstream && depth == "0", "journal depth \(depth); differing: \(differing.sorted()); \(PostgresFailoverTests.logTails(["a": agents[0], "b": agents[1], "c": agents[2]]))")
        try await PostgresFailoverTests.expectTheAccountsRecordHolds(
            server: cluster.server, database: cluster.database, account: cluster.account, accepted: accepted, epoch: epoch)
        await PostgresFailoverTests.stopCleanly(agents)
        await loop.shutdown()
    }
}

/// A Gorush-style sender behind a load balancer: one push after another, each with its own
/// `notif_id`, to an agent picked at random and again (another pick, after 200 ms) on a refusal
/// or a failed transfer, up to 60 times; and a change at the Sandbox before each.
actor FlappingSender {
    let loop: CurlLoop
    let book: OrderBook
    let orders: [Int]
    let agents: [PostgresFailoverTests.Agent]
    private var random = SplitMix(state: 0x5E4D_0060)

    init(loop: CurlLoop, book: OrderBook, orders: [Int], agents: [PostgresFailoverTests.Agent]) {
        self.loop = loop
        self.book = book
        self.orders = orders
        self.agents = agents
    }

    /// Pushes until `end`: how many pushes, and the `notif_id`s acknowledged.
    func run(until end: ContinuousClock.Instant) async throws -> (pushes: Int, accepted: [String]) {
        var headers: HTTPHeaders = ["Content-Type": "application/json"]
        headers.add(name: "Authorization", value: "Bearer " + PostgresNamespacePartitionTests.bearer)
        var (pushes, accepted) = (0, [String]())
        while ContinuousClock().now < end {
            pushes += 1
            let order = orders[Int(random.next() % UInt64(orders.count))]
            book.update(order, status: ["assigned", "picked_up", "delivering"][Int(random.next() % 3)],
                        announce: random.next() % 2 == 0 ? .fullBody : .silent)
            let body = #"{"notifications":[{"tokens":["t"],"platform":2,"notif_id":"f-\#(pushes)","data":{"type":"order.updated","order_id":\#(order)}}]}"#
            for _ in 0..<60 {
                let agent = agents[Int(random.next() % UInt64(agents.count))]
                let status = (try? await loop.perform(HTTPRequest(
                    url: agent.url + "/api/push", method: "POST", headers: headers, body: Array(body.utf8),
                    timeout: .seconds(10))).status) ?? 0
                if status == 200 {
                    accepted.append("f-\(pushes)")
                    break
                }
                try await Task.sleep(for: .milliseconds(200))
            }
        }
        return (pushes, accepted)
    }
}
