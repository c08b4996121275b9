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

/// DESIGN §12 with the real executable: two `orderlive run` processes for one account on one
/// PostgreSQL database against the Sandbox. One leads (streams and applies), the other follows
/// (ingests pushes, which the leader applies); the leader is killed with SIGKILL and the follower
/// takes over within `failover_s`, resuming from the shared cursor, and the store ends equal to
/// the Sandbox.
@Suite(.serialized, .timeLimit(.minutes(5))) struct PostgresFailoverTests {
    struct Agent {
        let child: OrderliveProcess
        let logs: LogWatch
        let reader: Task<Void, Never>
        let url: String
    }

    /// SIGKILL: the leader's sockets close and the lock is free at once. SIGSTOP: the frozen leader's
    /// session is ended by the server after `failover_s` (`idle_session_timeout`); after SIGCONT its
    /// late writes are refused by the fence and it steps down.
    @Test(arguments: [SIGKILL, SIGSTOP])
    func whenTheLeaderIsKilledOrFrozenTheFollowerTakesOverAndTheStoreEndsEqualToTheBackend(signal: Int32) async throws {
        try await HeavyScenarios.gate.exclusively {
            let server = try await PostgresServer.running()
            let database = try await server.database()
            let configs = try PostgresAgentConfiguration(
                "e2e", url: server.url(database: database), account: "depot-7", failover: 3)
            defer { configs.remove() }
            let sandbox = SandboxConfiguration(
                port: 0, auth: SandboxAuthConfiguration(requiresAuthentication: true), feed: .orderBook)
            let loop = try CurlLoop(logger: quietLogger)
            let http = AgentHTTP(loop: loop)
            try await Sandbox.withRunning(sandbox) { sandbox in
                let environment = ["ORDERLIVE_UPSTREAM_BASE_URL": await sandbox.baseURL]
                let book = sandbox.orders
                let ids = (0..<4).map { _ in book.create() }
                func start(_ name: String) async throws -> Agent {
                    try await Self.start(name, configs: configs, environment: environment)
                }
                func stored() async throws -> [String: String] {
                    try await Self.storedStatuses(server: server, database: database, account: "depot-7")
                }
                let first = try await start("first")
                guard let led = await first.logs.wait(message: "this agent leads its account now: it streams and applies") else {
                    Issue.record("the first agent never led: \(first.logs.raw.suffix(30).joined(separator: "\n"))")
                    return
                }
                #expect(led.line["cluster.epoch"] == "1")
                let second = try await start("second")

                // The leader streams and applies.
                for id in ids { book.update(id, status: "assigned") }
                let streamed = try #require(await first.logs.wait(message: "event journaled", ["stream.event.id": "\(book.latestSequence)"]))
                _ = try #require(await first.logs.wait(from: streamed.index, message: "journal drained"))
                // A "journal drained" logged just after the last event's commit may come from a read
                // of the journal made just before it: the executor, woken by that commit, applies it
                // next. The rows are written by another process; no event of this one announces them.
                let snapshot = book.snapshot.mapValues(\.status)
                let converged = await eventually(within: .seconds(5)) { try await stored() == snapshot }
                let storedNow = try await stored()
                #expect(converged, "stored: \(storedNow), backend: \(snapshot)")

                try await Self.expectAPushToTheFollowerAppliedByTheLeader(first, second, order: ids[0], book: book, loop: loop)
                let followerReady = try await http.get(second.url + "/readyz")
                #expect(followerReady.status == 200, "a follower is ready: \(followerReady.body)")
                #expect(followerReady.body.contains(#""cluster":{"backend":"postgres","account":"depot-7","role":"follower","epoch":1"#),
                        "\(followerReady.body)")
                #expect(!second.logs.lines.contains { $0["message"] == "stream open" }, "a follower never streams")

                // The leader dies; the follower takes over and resumes from the shared cursor.
                let cursor = try await server.psql(
                    "SELECT value FROM orderlive_stream_cursor WHERE account = 'depot-7'", database: database)
                let clock = ContinuousClock()
                let killedAt = clock.now
                first.child.signal(signal)
                if signal == SIGKILL { _ = await first.child.waitForExit() }
                // Changes the frozen leader's open stream is sent too: it reads them when it wakes.
                if signal == SIGSTOP { book.update(ids[3], status: "picked_up") }
                let took = try #require(await second.logs.wait(message: "this agent leads its account now: it streams and applies"))
                let takeover = clock.now - killedAt
                #expect(took.line["cluster.epoch"] == "2")
                #expect(takeover < .seconds(5), "failover_s is 3 s; the takeover took \(takeover)")
                if signal == SIGSTOP {
                    // Woken, the old leader finds its session ended: it steps down, and nothing it
                    // still tries to write passes the fence.
                    let before = first.logs.count
                    first.child.signal(SIGCONT)
                    _ = try #require(await first.logs.wait(from: before, message: "the database cannot be used for leadership; retrying"))
                }
                let resumed = try #require(await second.logs.wait(from: took.index, message: "stream open"))
                #expect(resumed.line["stream.cursor"] == cursor)
                book.update(ids[1], status: "delivered")
                book.delete(ids[2])
                let created = book.create()
                let caughtUp = try #require(await second.logs.wait(
                    from: resumed.index, message: "event journaled", ["stream.event.id": "\(book.latestSequence)"]))
                _ = try #require(await second.logs.wait(from: caughtUp.index, message: "journal drained"))
                let upstream = book.snapshot.mapValues(\.status)
                #expect(try await stored() == upstream)
                #expect(upstream["\(created)"] != nil && upstream["\(ids[2])"] == nil)
                _ = try #require(await second.logs.wait(from: took.index, message: "stream status recorded"))
                try await Self.expectTheNewLeaderSeenFromOutside(
                    second, configs: configs, environment: environment, http: http, upstream: upstream)

                // Neither the database password nor the user's password is in any log line.
                for secret in [PostgresAgentConfiguration.databasePassword, SandboxUser.demo.password] {
                    #expect(!(first.logs.raw + second.logs.raw).contains { $0.contains(secret) })
                }
                await Self.stopCleanly(oldLeader: first, woken: signal == SIGSTOP, newLeader: second)
                let epochs = try await server.psql("SELECT epoch FROM orderlive_leadership WHERE account = 'depot-7'", database: database)
                #expect(epochs == "2", "exactly one takeover")
                await first.reader.value
                await second.reader.value
            }
            await loop.shutdown()
        }
    }

    /// The database stopped and started while pushes keep coming: every push is answered 200 or
    /// 503 (never hangs past `failover_s`), every push answered 200 is journaled (its `notif_id`
    /// kept) and applied, and the agent recovers by itself: it leads again and its store ends equal
    /// to the Sandbox.
    @Test func theDatabaseStoppedAndStartedUnderLoadLosesNothingAcknowledgedAndTheAgentRecovers() async throws {
        try await HeavyScenarios.gate.exclusively {
            let server = try await PostgresServer.dedicated()
            let database = try await server.database()
            let configs = try PostgresAgentConfiguration(
                "restart", url: server.url(database: database), account: "depot-9", failover: 2)
            defer { configs.remove() }
            let configFile = try configs.write("agent")
            let sandbox = SandboxConfiguration(
                port: 0, auth: SandboxAuthConfiguration(requiresAuthentication: true), feed: .orderBook)
            let loop = try CurlLoop(logger: quietLogger)
            try await Sandbox.withRunning(sandbox) { sandbox in
                let book = sandbox.orders
                let ids = (0..<6).map { _ in book.create() }
                let child = try OrderliveProcess(["run", "--config", configFile],
                                                 environment: ["ORDERLIVE_UPSTREAM_BASE_URL": await sandbox.baseURL],
                                                 readStandardError: true, lifetime: .seconds(90))
                let logs = LogWatch()
                let reader = Task { await logs.follow(child.lines) }
                let listening = try #require(await logs.wait(message: "push endpoint listening"))
                let pushURL = "http://" + (listening.line["push.listen"] ?? "") + "/api/push"
                _ = try #require(await logs.wait(message: "this agent leads its account now: it streams and applies"))

                // Pushes, one notification each with its own notif_id, before, during and after the outage.
                var accepted: [String] = []
                var refused = 0
                var number = 0
                func push() async throws {
                    number += 1
                    let id = ids[number % ids.count]
                    book.update(id, status: number % 2 == 0 ? "assigned" : "picked_up", announce: .silent)
                    let clock = ContinuousClock()
                    let sent = clock.now
                    let answer = try await loop.perform(HTTPRequest(
                        url: pushURL, method: "POST", headers: ["Content-Type": "application/json"],
                        body: Array(#"{"notifications":[{"tokens":["t"],"platform":2,"notif_id":"n-\#(number)","data":{"type":"order.updated","order_id":\#(id)}}]}"#.utf8)))
                    #expect(clock.now - sent < .seconds(4), "a push waited \(clock.now - sent) for the database")
                    switch answer.status {
                    case 200: accepted.append("n-\(number)")
                    case 503: refused += 1
                    default: Issue.record("push answered \(answer.status)")
                    }
                }
                for _ in 0..<5 { try await push() }
                try await server.stop()
                for _ in 0..<3 { try await push() }
                let unwritable = try #require(await logs.wait(message: "the order store cannot be written; pushes get 503 and the stream waits"))
                let reason = unwritable.line["store.reason"] ?? ""
                #expect(reason.contains("cannot be reached") || reason.contains("shutting down"), "\(unwritable.line)")
                try await server.start()
                // Recovered by itself: it leads again, and pushes are accepted.
                guard await logs.wait(from: unwritable.index, message: "this agent leads its account now: it streams and applies") != nil else {
                    Issue.record("the agent did not lead again: \(logs.raw.suffix(60).joined(separator: "\n"))")
                    return
                }
                for _ in 0..<5 { try await push() }
                #expect(refused >= 1, "pushes while the database was gone get 503")
                #expect(accepted.count >= 10)

                // Every acknowledged push is journaled: its notif_id is kept...
                let keys = try await server.psql(
                    "SELECT id FROM orderlive_dedupe_key WHERE account = 'depot-9' AND id LIKE 'notification:%'", database: database)
                let kept = Set(keys.split(separator: "\n").map { String($0.dropFirst("notification:".count)) })
                #expect(Set(accepted).isSubset(of: kept), "acknowledged but not kept: \(Set(accepted).subtracting(kept).sorted())")
                // ...and applied: the store ends equal to the Sandbox.
                let upstream = book.snapshot.mapValues(\.status)
                let (stored, _) = try await Self.converge(
                    server: server, database: database, account: "depot-9", to: upstream, leaderLogs: logs)
                #expect(stored == upstream)
                child.signal(SIGTERM)
                let (status, _) = await child.waitForExit()
                #expect(status == 0)
                await reader.value
            }
            await loop.shutdown()
            try? await server.stop()
        }
    }

    /// Starts `orderlive run` with the configuration `name` (through `launcher`, when given: on a
    /// host of a ``NetworkLab``), once its push listener listens; it is killed after `lifetime`
    /// should the scenario hang.
    static func start(_ name: String, configs: PostgresAgentConfiguration, environment: [String: String],
                      lifetime: Duration = .seconds(120), url: String? = nil, launcher: [String] = []) async throws -> Agent {
        let child = try OrderliveProcess(["run", "--config", try configs.write(name, url: url)], environment: environment,
                                         readStandardError: true, lifetime: lifetime, launcher: launcher)
        let logs = LogWatch()
        let reader = Task { await logs.follow(child.lines) }
        guard let listening = await logs.wait(message: "push endpoint listening") else {
            throw PostgresServer.Failure(description: "\(name) never listened: \(logs.raw.suffix(20))")
        }
        return Agent(child: child, logs: logs, reader: reader, url: "http://" + (listening.line["push.listen"] ?? ""))
    }

    /// The account's stored orders, id to status, read with psql.
    static func storedStatuses(server: PostgresServer, database: String, account: String) async throws -> [String: String] {
        let rows = try await server.psql(
            "SELECT id || ' ' || status FROM orderlive_order WHERE account = '\(account)' ORDER BY id", database: database)
        var result: [String: String] = [:]
        for row in rows.split(separator: "\n") {
            let parts = row.split(separator: " ")
            if parts.count == 2 { result[String(parts[0])] = String(parts[1]) }
        }
        return result
    }

    /// The new leader as other processes see it: `status` in another process shows the cluster as the
    /// agent recorded it, `/readyz` and `/metrics` the leadership, and `orders list` reads the account
    /// from PostgreSQL like the agents.
    static func expectTheNewLeaderSeenFromOutside(
        _ leader: Agent, configs: PostgresAgentConfiguration, environment: [String: String], http: AgentHTTP,
        upstream: [String: String]
    ) async throws {
        let statusCommand = try OrderliveProcess(["status", "--json", "--config", try configs.write("second")], environment: environment)
        var statusLines: [String] = []
        for await line in statusCommand.lines { statusLines.append(line) }
        _ = await statusCommand.waitForExit()
        #expect(statusLines.joined().contains(#""cluster":{"backend":"postgres","account":"depot-7","role":"leader","epoch":2"#),
                "\(statusLines)")
        let leaderReady = try await http.get(leader.url + "/readyz")
        #expect(leaderReady.body.contains(#""role":"leader","epoch":2"#), "\(leaderReady.body)")
        let metrics = try await http.get(leader.url + "/metrics").body
        #expect(metrics.contains("orderlive_cluster_leader 1") && metrics.contains("orderlive_cluster_takeovers_total 1"),
                "\(metrics)")
        let lister = try OrderliveProcess(["orders", "list", "--json", "--config", try configs.write("second")], environment: environment)
        var output: [String] = []
        for await line in lister.lines { output.append(line) }
        let (listed, errors) = await lister.waitForExit()
        #expect(listed == 0, "\(errors)")
        let array = try JSONSerialization.jsonObject(with: Data(output.joined(separator: "\n").utf8)) as? [[String: Any]] ?? []
        #expect(Dictionary(uniqueKeysWithValues: array.map { ("\($0["id"] ?? "")", "\($0["status"] ?? "")") }) == upstream)
    }

    /// A silent push to the follower: it journals, the leader is woken by NOTIFY and applies the fetch.
    static func expectAPushToTheFollowerAppliedByTheLeader(
        _ leader: Agent, _ follower: Agent, order id: Int, book: OrderBook, loop: CurlLoop
    ) async throws {
        book.update(id, status: "delivering", announce: .silent)
        let version = try #require(book.snapshot["\(id)"]?.version)
        let push = try await loop.perform(HTTPRequest(
            url: follower.url + "/api/push", method: "POST", headers: ["Content-Type": "application/json"],
            body: Array(#"{"notifications":[{"tokens":["t"],"platform":2,"content_available":true,"data":{"type":"order.status_changed","order_id":\#(id),"version":\#(version)}}]}"#.utf8)))
        #expect(push.status == 200, "\(String(decoding: push.body, as: UTF8.self))")
        _ = try #require(await leader.logs.wait(
            message: "sync job applied", ["sync.job.kind": "fetch", "sync.job.order_id": "\(id)"]))
    }

    /// SIGTERM: the woken old leader, a follower now, stops cleanly first (stopped after the new
    /// leader, it would rightly take the account over when that one lets go), then the new leader.
    static func stopCleanly(oldLeader first: Agent, woken: Bool, newLeader second: Agent) async {
        if woken {
            #expect(first.logs.lines.filter { $0["message"] == "this agent leads its account now: it streams and applies" }.count == 1,
                    "the woken leader did not lead again while the other led")
            first.child.signal(SIGTERM)
            let (oldStatus, _) = await first.child.waitForExit()
            #expect(oldStatus == 0)
        }
        second.child.signal(SIGTERM)
        let (status, _) = await second.child.waitForExit()
        #expect(status == 0)
    }
}
