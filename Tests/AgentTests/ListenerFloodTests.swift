import CurlHTTP
import Foundation
import Testing
import TestHarnesses
import TestKit

/// Issue 37, against the real executable with the attacker in another process: idle and slow-header
/// floods on either listener do not keep a real request from being answered within 2 s, an API flood
/// under a low descriptor limit leaves pushes answered, `allow_from` closes strangers, and two agents
/// racing for one address end with the usual error.
/// `make test` runs this suite alone, after the parallel suite (TIMING_TESTS): its 2 s bound is real time.
@Suite(.serialized, .timeLimit(.minutes(5))) struct ListenerFloodTests {
    /// How long a real request may take beside the flood: 2 s, scaled for a slower build (TSan).
    static let bound = 2.0 * Double(TestTime.scale)

    static func environment(_ directory: String, _ extra: [String: String] = [:]) -> [String: String] {
        [
            "ORDERLIVE_UPSTREAM_BASE_URL": "http://127.0.0.1:1", "ORDERLIVE_STORE_STATE_DIR": directory + "/state",
            "ORDERLIVE_INGEST_LISTEN": "127.0.0.1:0", "ORDERLIVE_API_LISTEN": "127.0.0.1:0", "ORDERLIVE_LOG_FORMAT": "json",
        ].merging(extra) { $1 }
    }

    static func directory() throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("orderlive-flood-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    static let push = Array(#"{"notifications":[{"tokens":["t"],"platform":2,"data":{"order_id":7}}]}"#.utf8)

    /// A request answered, and how long it took.
    static func timed(_ loop: CurlLoop, _ request: HTTPRequest) async throws -> (status: Int, seconds: Double) {
        let clock = ContinuousClock()
        let started = clock.now
        let response = try await loop.perform(request)
        let elapsed = clock.now - started
        return (response.status, Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18)
    }

    static func pushRequest(_ base: String) -> HTTPRequest {
        HTTPRequest(url: base + "/api/push", method: "POST", headers: ["Content-Type": "application/json"], body: push,
                    connectTimeout: .seconds(5), timeout: .seconds(5))
    }

    static func port(_ address: String) throws -> Int {
        try #require(address.split(separator: ":").last.flatMap { Int($0) })
    }

    @Test func idleAndSlowFloodsOnEitherListenerLeaveRealRequestsAnsweredWithinTwoSeconds() async throws {
        let directory = try Self.directory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        // The API's limit below the flood too, so both listeners are full and must evict.
        let agent = try RunningAgent([], environment: Self.environment(directory, ["ORDERLIVE_API_MAX_CONNECTIONS": "1000"]),
                                     limit: .seconds(240))
        let pushAddress = try #require(await agent.logs.wait(message: "push endpoint listening")?.line["push.listen"])
        let apiAddress = try #require(await agent.logs.wait(message: "orders API listening")?.line["api.listen"])
        let (pushBase, apiBase) = ("http://" + pushAddress, "http://" + apiAddress)
        let loop = try CurlLoop(logger: quietLogger)

        for (name, address) in [("push", pushAddress), ("api", apiAddress)] {
            let flood = try await ConnectionFlood(port: try Self.port(address), idle: 2_000, slow: 1_100)
            #expect(flood.opened.hasPrefix("ready "), "\(name): \(flood.opened)")
            for round in 0..<5 {
                let pushed = try await Self.timed(loop, Self.pushRequest(pushBase))
                #expect(pushed.status == 200 && pushed.seconds < Self.bound, "\(name) flood, round \(round): push \(pushed)")
                let orders = try await Self.timed(loop, HTTPRequest(url: apiBase + "/v1/orders", connectTimeout: .seconds(5),
                                                                    timeout: .seconds(5)))
                #expect(orders.status == 200 && orders.seconds < Self.bound, "\(name) flood, round \(round): orders \(orders)")
                try await Task.sleep(for: .milliseconds(500))
            }
            let said = await flood.stop()
            #expect(said.hasPrefix("reopened "), "\(name): \(said)")
            let metrics = try #require(prometheusSamples(try await AgentHTTP(loop: loop).get(pushBase + "/metrics").body))
            let evicted = metrics[#"orderlive_connections_closed_total{listener="\#(name)",reason="evicted"}"#] ?? 0
            #expect(evicted >= 1_000, "\(name): the flood's connections were closed for the real ones: \(evicted)")
        }
        await loop.shutdown()
        agent.child.signal(SIGTERM)
        #expect(await agent.finish() == 0)
    }

    @Test func anAPIFloodUnderALowDescriptorLimitLeavesPushesAnswered() async throws {
        let directory = try Self.directory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        // 1,400 descriptors: 1,024 for the push listener, 128 kept, 248 for the orders API.
        let agent = try RunningAgent([], environment: Self.environment(directory), limit: .seconds(180),
                                     openFiles: (soft: 1_400, hard: 1_400))
        let pushAddress = try #require(await agent.logs.wait(message: "push endpoint listening")?.line["push.listen"])
        let apiAddress = try #require(await agent.logs.wait(message: "orders API listening")?.line["api.listen"])
        let share = try #require(await agent.logs.wait(
            message: "the open-file limit holds fewer orders API connections than api.max_connections"))
        #expect(share.line["api.connections_held"] == "248", "\(share.line)")
        let loop = try CurlLoop(logger: quietLogger)
        let pushBase = "http://" + pushAddress

        let flood = try await ConnectionFlood(port: try Self.port(apiAddress), idle: 2_000, slow: 0)
        #expect(flood.opened.hasPrefix("ready "), "\(flood.opened)")
        for round in 0..<5 {
            let pushed = try await Self.timed(loop, Self.pushRequest(pushBase))
            #expect(pushed.status == 200 && pushed.seconds < Self.bound, "round \(round): \(pushed)")
            let ready = try await AgentHTTP(loop: loop).get(pushBase + "/readyz")
            #expect(ready.status == 200 || ready.body.contains("session"), "round \(round): \(ready)")
            let status = try await AgentHTTP(loop: loop).get(pushBase + "/api/status")
            #expect(status.status == 200)
            try await Task.sleep(for: .milliseconds(300))
        }
        let api = try await Self.timed(loop, HTTPRequest(url: "http://" + apiAddress + "/healthz", connectTimeout: .seconds(5),
                                                         timeout: .seconds(5)))
        #expect(api.status == 200 && api.seconds < Self.bound, "the flooded listener itself still answers: \(api)")
        _ = await flood.stop()
        await loop.shutdown()
        agent.child.signal(SIGTERM)
        #expect(await agent.finish() == 0)
    }

    @Test func peersOutsideAllowFromAreClosedAndCounted() async throws {
        let directory = try Self.directory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let agent = try RunningAgent([], environment: Self.environment(directory, [
            "ORDERLIVE_INGEST_ALLOW_FROM": "127.0.0.0/8, ::1", "ORDERLIVE_API_ALLOW_FROM": "10.0.0.0/8",
        ]))
        let pushAddress = try #require(await agent.logs.wait(message: "push endpoint listening")?.line["push.listen"])
        let apiAddress = try #require(await agent.logs.wait(message: "orders API listening")?.line["api.listen"])
        let loop = try CurlLoop(logger: quietLogger)
        let refused = try? await loop.perform(HTTPRequest(url: "http://" + apiAddress + "/healthz", timeout: .seconds(5)))
        #expect(refused == nil, "127.0.0.1 is outside api.allow_from: \(String(describing: refused?.status))")
        let metrics = try await AgentHTTP(loop: loop).get("http://" + pushAddress + "/metrics")
        #expect(metrics.status == 200, "127.0.0.1 is inside ingest.allow_from")
        let samples = try #require(prometheusSamples(metrics.body))
        #expect(samples[#"orderlive_connections_closed_total{listener="api",reason="not_allowed"}"#] == 1)
        await loop.shutdown()
        agent.child.signal(SIGTERM)
        #expect(await agent.finish() == 0)
    }

    @Test func twoAgentsRacingForOneAddressEndWithTheErrorThatNamesTheKey() async throws {
        let directory = try Self.directory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        // A free port, released again, for both to race for.
        let probe = try freeLoopbackPort()
        let agents = try (0..<2).map { index in
            try RunningAgent([], environment: Self.environment(directory + "/\(index)", [
                "ORDERLIVE_INGEST_LISTEN": "127.0.0.1:\(probe)",
            ]))
        }
        // Exactly one listens; the other exits 1 with the start-up check's words, whichever way it lost.
        var winners: [RunningAgent] = []
        var losers: [(RunningAgent, Int32)] = []
        await withTaskGroup(of: (Int, Bool).self) { group in
            for (index, agent) in agents.enumerated() {
                group.addTask {
                    let listening = await agent.logs.wait(within: .seconds(30), message: "push endpoint listening")
                    return (index, listening != nil)
                }
            }
            for await (index, listening) in group where listening { winners.append(agents[index]) }
        }
        for agent in agents where !winners.contains(where: { $0.child.process === agent.child.process }) {
            losers.append((agent, await agent.finish()))
        }
        #expect(winners.count == 1 && losers.count == 1)
        for (loser, status) in losers {
            let said = loser.logs.raw.joined(separator: "\n")
            #expect(status == 1, "\(said)")
            #expect(said.contains("cannot listen on 127.0.0.1:\(probe) ('ingest.listen'): the port is in use"), "\(said)")
            #expect(!said.contains("errno") && !said.contains("bind("), "\(said)")
        }
        for winner in winners {
            winner.child.signal(SIGTERM)
            #expect(await winner.finish() == 0)
        }
    }
}
