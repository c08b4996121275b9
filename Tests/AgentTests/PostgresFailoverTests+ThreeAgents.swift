import AsyncSignals
import CurlHTTP
import Foundation
import Logging
import Sandbox
import Testing
import TestHarnesses
import TestKit

#if canImport(Glibc)
import Glibc
#endif


extension PostgresFailoverTests {
    /// Three agents for one account; five times the leader is killed with SIGKILL at a random
    /// moment (and restarted, so three agents remain), then once frozen with SIGSTOP beyond
    /// `failover_s`, while the Sandbox changes orders and pushes go to every agent. After each, a
    /// follower leads with the next epoch within `failover_s` plus its reconnect delay; at the end
    /// every acknowledged push is kept, the store equals the Sandbox, and the record of applied jobs
    /// shows none applied twice.
    @Test func threeAgentsSurviveFiveKilledLeadersAndAFrozenOne() async throws {
        try await HeavyScenarios.gate.exclusively {
            let server = try await PostgresServer.running()
            let database = try await server.database()
            let configs = try PostgresAgentConfiguration(
                "three", url: server.url(database: database), account: "depot-3", failover: 3)
            defer { configs.remove() }
            let leads = "this agent leads its account now: it streams and applies"
            let sandbox = SandboxConfiguration(
                port: 0, auth: SandboxAuthConfiguration(requiresAuthentication: true), feed: .orderBook)
            let loop = try CurlLoop(logger: quietLogger)
            try await Sandbox.withRunning(sandbox) { sandbox in
                let environment = ["ORDERLIVE_UPSTREAM_BASE_URL": await sandbox.baseURL]
                let book = sandbox.orders
                let ids = (0..<8).map { _ in book.create() }
                var random = SplitMix(state: 0x5EED_0015)
                func start(_ name: String) async throws -> Agent {
                    try await Self.start(name, configs: configs, environment: environment, lifetime: .seconds(240))
                }
                var agents: [String: Agent] = [:]
                for name in ["a", "b", "c"] { agents[name] = try await start(name) }
                var accepted: [String] = []
                var pushes = 0
                var refused = 0
                var down: String?
                func change() async throws {
                    let id = ids[Int(random.next() % UInt64(ids.count))]
                    book.update(id, status: ["assigned", "picked_up", "delivering"][Int(random.next() % 3)],
                                announce: random.next() % 2 == 0 ? .fullBody : .silent)
                    pushes += 1
                    let up = agents.filter { $0.key != down }.values.sorted { $0.url < $1.url }
                    let body = #"{"notifications":[{"tokens":["t"],"platform":2,"notif_id":"p-\#(pushes)","data":{"type":"order.updated","order_id":\#(id)}}]}"#
                    let (sent, refusals) = try await Self.pushUntilAccepted(body, to: up, random: &random, loop: loop)
                    if sent { accepted.append("p-\(pushes)") }
                    refused += refusals
                }
                func leader(epoch: Int) async -> String? { await Self.leader(epoch: epoch, among: agents, leads: leads) }
                var epoch = 1
                var current = try #require(await leader(epoch: epoch))
                let clock = ContinuousClock()
                for round in 0..<6 {
                    for _ in 0..<(3 + Int(random.next() % 5)) { try await change() }
                    let victim = try #require(agents[current])
                    let frozen = round == 5
                    let killedAt = clock.now
                    down = current
                    victim.child.signal(frozen ? SIGSTOP : SIGKILL)
                    epoch += 1
                    for _ in 0..<3 { try await change() }
                    guard let next = await leader(epoch: epoch) else {
                        Issue.record("nobody led with epoch \(epoch) after the leader \(current) was stopped")
                        return
                    }
                    let took = clock.now - killedAt
                    #expect(took < .seconds(6), "round \(round): failover_s 3 s, the takeover took \(took)")
                    #expect(next != current)
                    if frozen {
                        victim.child.signal(SIGCONT)
                    } else {
                        _ = await victim.child.waitForExit()
                        await victim.reader.value
                        agents[current] = try await start(current)
                    }
                    down = nil
                    current = next
                }
                for _ in 0..<5 { try await change() }
                #expect(accepted.count == pushes, "every push is accepted in the end (\(accepted.count) of \(pushes); \(refused) refusals first)")

                // The leader catches up: the store ends equal to the Sandbox, with an empty journal.
                let upstream = book.snapshot.mapValues(\.status)
                let newest = "\(book.latestSequence)"
                let leaderLogs = try #require(agents[current]?.logs)
                _ = try #require(await leaderLogs.wait(message: "event journaled", ["stream.event.id": newest]))
                let (stored, depth) = try await Self.converge(
                    server: server, database: database, account: "depot-3", to: upstream, leaderLogs: leaderLogs)
                let differing = Set(stored.keys).union(upstream.keys).filter { stored[$0] != upstream[$0] }.sorted()
                    .map { "\($0): stored \(stored[$0] ?? "none"), upstream \(upstream[$0] ?? "none")" }
                #expect(stored == upstream && depth == "0",
                        "journal depth \(depth), leader \(current) (epoch \(epoch)), differing \(differing); \(Self.logTails(agents))")
                try await Self.expectTheAccountsRecordHolds(server: server, database: database, accepted: accepted, epoch: epoch)
                await Self.stopCleanly(agents.values)
            }
            await loop.shutdown()
        }
    }

    /// The agent that leads with `epoch`, once one does, within 30 s. (A log wait cannot be
    /// cancelled: the others' end when their process does.)
    static func leader(epoch: Int, among agents: [String: Agent], leads: String) async -> String? {
        let found = OneShot<String?>()
        for (name, agent) in agents {
            Task {
                if await agent.logs.wait(message: leads, ["cluster.epoch": "\(epoch)"]) != nil { _ = found.give(name) }
            }
        }
        let deadline = Task {
            try? await Task.sleep(for: .seconds(30))
            _ = found.give(nil)
        }
        defer { deadline.cancel() }
        return await found.value
    }

    /// What the account's rows say after the rounds: no job was applied twice, let alone under two
    /// epochs (the frozen leader's late commits were refused by the fence); jobs were applied under
    /// several leaders; every acknowledged push's key is kept; the epoch is the last one.
    static func expectTheAccountsRecordHolds(
        server: PostgresServer, database: String, account: String = "depot-3", accepted: [String], epoch: Int
    ) async throws {
        let twice = try await server.psql("""
            SELECT string_agg(job_id::text, ',') FROM (SELECT job_id FROM orderlive_job_applied
            WHERE account = '\(account)' GROUP BY job_id HAVING COUNT(*) > 1) AS again
            """, database: database)
        #expect(twice.isEmpty, "jobs applied more than once: \(twice)")
        let applyingEpochs = try await server.psql(
            "SELECT string_agg(DISTINCT epoch::text, ',') FROM orderlive_job_applied WHERE account = '\(account)'",
            database: database).split(separator: ",").compactMap { Int($0) }
        #expect(applyingEpochs.count >= 2 && applyingEpochs.allSatisfy { (1...epoch).contains($0) },
                "epochs that applied jobs: \(applyingEpochs), last epoch \(epoch)")
        let keys = try await server.psql(
            "SELECT id FROM orderlive_dedupe_key WHERE account = '\(account)' AND id LIKE 'notification:%'", database: database)
        let kept = Set(keys.split(separator: "\n").map { String($0.dropFirst("notification:".count)) })
        #expect(Set(accepted).isSubset(of: kept), "acknowledged but not kept: \(Set(accepted).subtracting(kept).sorted())")
        #expect(try await server.psql("SELECT epoch FROM orderlive_leadership WHERE account = '\(account)'", database: database)
            == "\(epoch)")
    }

    /// SIGTERM to each agent: each exits 0 and logs no error after the signal. Lines are read as they
    /// come, so lines written before the signal may still be unread when it is sent: what the stop
    /// logged is told by the lines' own time. (Stopping closes the agent's own pool: that is not the
    /// database failing.) A leadership probe that missed its deadline (`failover_s / 4`) is not the
    /// stop's doing: on two cores under load (seen once in 26 runs, with two busy loops and a build
    /// beside the test) the machine can starve the probe in the moment between the signal and the agent
    /// marking itself as stopping, and the agent rightly says its leadership connection did not
    /// answer. What a stop itself can cause — a closed connection, a refused query — still fails.
    static func stopCleanly(_ agents: some Sequence<Agent>) async {
        let time = ISO8601DateFormatter()
        time.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        for agent in agents {
            let signalled = Date()
            agent.child.signal(SIGTERM)
            let (status, _) = await agent.child.waitForExit()
            await agent.reader.value
            #expect(status == 0, "the agent's last lines: \(agent.logs.raw.suffix(12).joined(separator: "\n"))")
            let errors = agent.logs.lines.filter { line in
                line["level"] == "error" && (time.date(from: line["time"] ?? "").map { $0 >= signalled } ?? true)
                    && line["store.reason"]?.hasPrefix("the leadership connection did not answer within") != true
            }
            #expect(errors.isEmpty, "error lines at a clean stop: \(errors)")
        }
    }

    /// Sends a push as a sender behind a load balancer would: to an agent that is up, and again
    /// (another pick, after 200 ms) while it is refused — a 503 while the frozen leader still holds the
    /// journal's lock — since a silent change's push is its only news. Whether it was accepted, and
    /// the refusals before.
    static func pushUntilAccepted(
        _ body: String, to up: [Agent], random: inout SplitMix, loop: CurlLoop
    ) async throws -> (accepted: Bool, refusals: Int) {
        for refusals in 0..<30 {
            let target = up[Int(random.next() % UInt64(up.count))]
            let answer = try await loop.perform(HTTPRequest(
                url: target.url + "/api/push", method: "POST", headers: ["Content-Type": "application/json"],
                body: Array(body.utf8)))
            if answer.status == 200 { return (true, refusals) }
            try await Task.sleep(for: .milliseconds(200))
        }
        return (false, 30)
    }

    /// The last lines of each agent's log, for a failure that must say where the agents stuck.
    static func logTails(_ agents: [String: Agent]) -> String {
        agents.sorted { $0.key < $1.key }.map { name, agent in
            "\(name):\n" + agent.logs.raw.suffix(25).joined(separator: "\n")
        }.joined(separator: "\n")
    }

    /// Reads the account's orders and journal until they equal `upstream` with an empty journal,
    /// waiting for the leader's next drain between reads; the last read. The log's position is taken
    /// before each read, so a drain logged after the read began ends the wait at once (taken after, a
    /// drain in between was waited for until the wait's deadline).
    static func converge(
        server: PostgresServer, database: String, account: String, to upstream: [String: String], leaderLogs: LogWatch
    ) async throws -> (stored: [String: String], depth: String) {
        var stored: [String: String] = [:]
        var depth = ""
        for _ in 0..<100 {
            let mark = leaderLogs.count
            stored = try await storedStatuses(server: server, database: database, account: account)
            depth = try await server.psql("SELECT COUNT(*) FROM orderlive_job WHERE account = '\(account)'", database: database)
            if stored == upstream, depth == "0" { break }
            _ = await leaderLogs.wait(from: mark, message: "journal drained")
        }
        return (stored, depth)
    }
}
