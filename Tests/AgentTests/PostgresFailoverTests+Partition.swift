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

extension PostgresFailoverTests {
    /// Issue 41: two agents, each reaching PostgreSQL through a proxy of its own; the leader's proxy
    /// silently stops passing packets (no RST, no FIN). The follower takes over and streams and
    /// applies within `failover_s` + 5 s; every push to the cut-off agent is answered within
    /// `failover_s` + 2 s (200 only when committed, else 503) and its `/readyz` within 1 s, turning
    /// 503; after the network heals it rejoins as a follower and accepts pushes, one agent leads,
    /// every acknowledged push is kept and no job was applied twice. The same when the network
    /// resets every connection of the leader's instead (RST, new ones too) until it heals.
    @Test(arguments: [true, false])
    func aLeaderCutOffFromTheDatabaseAnswersInBoundedTimeAndAFollowerTakesOver(silently: Bool) async throws {
        try await HeavyScenarios.gate.exclusively {
            let server = try await PostgresServer.running()
            let database = try await server.database()
            let failover = 3
            let configs = try PostgresAgentConfiguration(
                "partition", url: server.url(database: database), account: "depot-41", failover: failover)
            defer { configs.remove() }
            let proxies = try (PartitionProxy(to: server.port), PartitionProxy(to: server.port))
            func through(_ proxy: PartitionProxy) -> String {
                server.url(database: database).replacingOccurrences(of: ":\(server.port)/", with: ":\(proxy.port)/")
            }
            let leads = "this agent leads its account now: it streams and applies"
            let sandbox = SandboxConfiguration(
                port: 0, auth: SandboxAuthConfiguration(requiresAuthentication: true), feed: .orderBook)
            let loop = try CurlLoop(logger: quietLogger)
            let http = AgentHTTP(loop: loop)
            try await Sandbox.withRunning(sandbox) { sandbox in
                let environment = ["ORDERLIVE_UPSTREAM_BASE_URL": await sandbox.baseURL]
                let book = sandbox.orders
                let ids = (0..<4).map { _ in book.create() }
                let first = try await Self.start("a", configs: configs, environment: environment, url: through(proxies.0))
                _ = try #require(await first.logs.wait(message: leads))
                let second = try await Self.start("b", configs: configs, environment: environment, url: through(proxies.1))
                let pushes = PartitionPushes(loop: loop, book: book, orders: ids)
                for agent in [first, second, first, second] { _ = try await pushes.send(to: agent) }
                #expect(await pushes.accepted.count == 4, "pushes before the cut are accepted")

                // The cut: the leader's packets go nowhere, silently; or every connection is reset.
                let clock = ContinuousClock()
                if silently { proxies.0.hold() } else { proxies.0.refuse() }
                let cutAt = clock.now
                let cutWall = Date()
                try await Self.expectTheCutOffAgentAnswersInTime(first, pushes: pushes, failover: failover, since: cutAt, http: http)
                _ = try #require(await first.logs.wait(message: "the leadership connection failed: stopping the stream and the executor"))

                // The follower took over, streams and applies.
                let took = try #require(await second.logs.wait(message: leads, ["cluster.epoch": "2"]))
                let streaming = try #require(await second.logs.wait(from: took.index, message: "stream open"))
                let time = ISO8601DateFormatter()
                time.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
                let streamedAfter = (time.date(from: streaming.line["time"] ?? "") ?? .distantFuture).timeIntervalSince(cutWall)
                #expect(streamedAfter < Double(failover + 5), "the follower streams \(streamedAfter) s after the cut")
                book.update(ids[1], status: "delivered")
                _ = try #require(await second.logs.wait(
                    from: took.index, message: "event journaled", ["stream.event.id": "\(book.latestSequence)"]))
                for _ in 0..<2 { _ = try await pushes.send(to: second) }

                // Healed: the old leader rejoins as a follower and takes pushes again.
                proxies.0.heal()
                try await Self.expectTheOldLeaderRejoinsAsAFollower(first, pushes: pushes, http: http)

                // One leader, every acknowledged push kept and applied, no job applied twice.
                let upstream = book.snapshot.mapValues(\.status)
                let (stored, depth) = try await Self.converge(
                    server: server, database: database, account: "depot-41", to: upstream, leaderLogs: second.logs)
                #expect(stored == upstream && depth == "0")
                let leader = try await server.psql(
                    "SELECT epoch || ' ' || leader FROM orderlive_leadership WHERE account = 'depot-41'", database: database)
                #expect(leader == "2 " + (took.line["cluster.leader"] ?? "?"))
                let twice = try await server.psql("""
                    SELECT count(*) FROM (SELECT job_id FROM orderlive_job_applied WHERE account = 'depot-41'
                    GROUP BY job_id HAVING count(*) > 1) AS again
                    """, database: database)
                #expect(twice == "0", "no job applied twice")
                let keys = try await server.psql(
                    "SELECT id FROM orderlive_dedupe_key WHERE account = 'depot-41' AND id LIKE 'notification:%'", database: database)
                let kept = Set(keys.split(separator: "\n").map { String($0.dropFirst("notification:".count)) })
                let accepted = await pushes.accepted
                #expect(Set(accepted).isSubset(of: kept), "acknowledged but not kept: \(Set(accepted).subtracting(kept).sorted())")
                await Self.stopCleanly([first, second])
            }
            await proxies.0.stop()
            await proxies.1.stop()
            await loop.shutdown()
        }
    }

    /// For `failover_s` + 4 s after the cut at `cutAt`, pushes to the cut-off `agent` (one after
    /// another, and four at once) and its `/readyz` every 200 ms: every push is answered 200 or 503
    /// within `failover_s` + 2 s, some 503; every `/readyz` within 1 s, some 503.
    static func expectTheCutOffAgentAnswersInTime(
        _ agent: Agent, pushes: PartitionPushes, failover: Int, since cutAt: ContinuousClock.Instant, http: AgentHTTP
    ) async throws {
        let clock = ContinuousClock()
        let readiness = Task { try await Self.pollReadiness(of: agent, for: .seconds(failover + 4), http: http) }
        let concurrent = (0..<4).map { _ in Task { try await pushes.send(to: agent) } }
        var answers: [(status: Int, took: Duration)] = []
        while clock.now - cutAt < .seconds(failover + 4) { answers.append(try await pushes.send(to: agent)) }
        for push in concurrent { answers.append(try await push.value) }
        let bound = Duration.seconds(failover + 2)
        #expect(answers.allSatisfy { $0.took < bound && [200, 503].contains($0.status) },
                "every push to the cut-off agent is answered 200 or 503 within \(bound): \(answers)")
        #expect(answers.contains { $0.status == 503 }, "the cut-off agent refuses pushes it cannot commit: \(answers)")
        let polls = try await readiness.value
        #expect(polls.allSatisfy { $0.took < .seconds(1) }, "/readyz answers within 1 s: \(polls)")
        #expect(polls.contains { $0.status == 503 }, "the cut-off agent is not ready: \(polls)")
    }

    /// After the heal: the old leader `agent` is ready as a follower within 30 s and accepts a push
    /// again within 5 s.
    static func expectTheOldLeaderRejoinsAsAFollower(_ agent: Agent, pushes: PartitionPushes, http: AgentHTTP) async throws {
        let rejoined = try await Self.waitReady(agent, role: "follower", http: http)
        #expect(rejoined, "the old leader rejoins as a follower: \(agent.logs.raw.suffix(30).joined(separator: "\n"))")
        var healedAnswer = 0
        for _ in 0..<20 where healedAnswer != 200 {
            healedAnswer = try await pushes.send(to: agent).status
            if healedAnswer != 200 { try await Task.sleep(for: .milliseconds(250)) }
        }
        #expect(healedAnswer == 200, "after healing the old leader accepts pushes")
    }

    /// `/readyz` of `agent` every 200 ms for `duration`: each answer's status and how long it took
    /// (a transfer cut off after 5 s counts as status 0).
    static func pollReadiness(of agent: Agent, for duration: Duration, http: AgentHTTP) async throws -> [(status: Int, took: Duration)] {
        let clock = ContinuousClock()
        let start = clock.now
        var polls: [(status: Int, took: Duration)] = []
        while clock.now - start < duration {
            let sent = clock.now
            let status = (try? await http.loop.perform(HTTPRequest(url: agent.url + "/readyz", timeout: .seconds(5))).status) ?? 0
            polls.append((status, clock.now - sent))
            try await Task.sleep(for: .milliseconds(200))
        }
        return polls
    }

    /// Waits up to 30 s for `agent`'s `/readyz` to answer 200 with `role`.
    static func waitReady(_ agent: Agent, role: String, http: AgentHTTP) async throws -> Bool {
        for _ in 0..<120 {
            if let ready = try? await http.get(agent.url + "/readyz"), ready.status == 200,
               ready.body.contains(#""role":"\#(role)""#) { return true }
            try await Task.sleep(for: .milliseconds(250))
        }
        return false
    }
}

/// Pushes with a `notif_id` each, measured, remembering which were acknowledged.
actor PartitionPushes {
    let loop: CurlLoop
    let book: OrderBook
    let orders: [Int]
    /// Sent with each push: an `Authorization` header when the agents want one.
    let headers: HTTPHeaders
    private(set) var accepted: [String] = []
    private var sent = 0

    init(loop: CurlLoop, book: OrderBook, orders: [Int], bearer: String? = nil) {
        self.loop = loop
        self.book = book
        self.orders = orders
        var headers: HTTPHeaders = ["Content-Type": "application/json"]
        if let bearer { headers.add(name: "Authorization", value: "Bearer " + bearer) }
        self.headers = headers
    }

    /// One push of a silent change to `agent`: its status (0 when the transfer failed) and how long it took.
    func send(to agent: PostgresFailoverTests.Agent) async throws -> (status: Int, took: Duration) {
        sent += 1
        let id = "q-\(sent)"
        let order = orders[sent % orders.count]
        book.update(order, status: sent % 2 == 0 ? "assigned" : "picked_up", announce: .silent)
        let clock = ContinuousClock()
        let start = clock.now
        let body = #"{"notifications":[{"tokens":["t"],"platform":2,"notif_id":"\#(id)","data":{"type":"order.updated","order_id":\#(order)}}]}"#
        let status = (try? await loop.perform(HTTPRequest(
            url: agent.url + "/api/push", method: "POST", headers: headers,
            body: Array(body.utf8), timeout: .seconds(30))).status) ?? 0
        if status == 200 { accepted.append(id) }
        return (status, clock.now - start)
    }
}
