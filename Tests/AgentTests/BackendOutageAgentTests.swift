import Agent
import CurlHTTP
import Foundation
import GRDB
import Sandbox
import StoreModel
import TestHarnesses
import TestKit
import Testing
import PushIngest

/// Issue 54 on a whole agent, against the Sandbox over real HTTP, on both store engines: one order
/// the backend cannot serve holds no other order, and an outage of the orders endpoint many times
/// longer than the whole retry schedule makes no dead letter, shows on `/readyz` and `/metrics`,
/// and ends with the store equal to the backend within `sync.outage_probe_max_s` + 2 s. Its bounds
/// are times on real sockets: `make test` runs it alone, after the parallel suite.
@Suite(.timeLimit(.minutes(5))) struct BackendOutageAgentTests {
    enum Engine: String, CaseIterable, Sendable { case sqlite, postgres }

    /// An agent in this process against `sandbox`: 3 attempts, retries from `retryBase` doubling, and
    /// probes at most 1 s apart.
    static func withAgent(
        _ engine: Engine, retryBase: Duration, _ body: (Sandbox, AgentProgram, _ push: String, CurlLoop) async throws -> Void
    ) async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("orderlive-outage-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let sandboxConfiguration = SandboxConfiguration(
            port: 0, auth: SandboxAuthConfiguration(requiresAuthentication: true), feed: .orderBook)
        try await Sandbox.withRunning(sandboxConfiguration) { sandbox in
            var configuration = await SandboxedAgent.configuration(sandbox, directory: directory, api: false)
            configuration.sync.maximumAttempts = 3
            configuration.sync.retryBase = retryBase
            configuration.sync.retryMaximum = .seconds(1)
            configuration.sync.outageProbeMaximum = .seconds(1)
            if engine == .postgres {
                let server = try await PostgresServer.running()
                configuration.store.backend = .postgres
                configuration.store.postgresURL = server.url(database: try await server.database())
                configuration.store.account = "outage"
            }
            let program = try AgentBuilder.build(
                configuration: configuration, logger: quietLogger,
                environment: SandboxedAgent.environment)
            let running = Task { try await program.run(handlingSignals: false) }
            let port = try #require(await program.pushServer?.port)
            let loop = try CurlLoop(logger: quietLogger)
            do {
                try await body(sandbox, program, "http://127.0.0.1:\(port)", loop)
            } catch {
                await program.shutdown()
                throw error
            }
            await program.shutdown()
            try await running.value
            await loop.shutdown()
        }
    }

    /// Waits until `condition` holds, for at most `limit`; how long it took, or nil when it never did.
    static func until(_ limit: Duration = .seconds(30), _ condition: () async throws -> Bool) async throws -> Duration? {
        let clock = ContinuousClock()
        let start = clock.now
        while clock.now - start < limit {
            if try await condition() { return clock.now - start }
            try await Task.sleep(for: .milliseconds(20))
        }
        return try await condition() ? clock.now - start : nil
    }

    /// How long until order `id` has `status` in the store (at most 10 s).
    static func arrival(of id: Int, status: String, in program: AgentProgram) async throws -> Duration {
        let clock = ContinuousClock()
        let start = clock.now
        while clock.now - start < .seconds(10) {
            if try await program.store.order(id: "\(id)")?.status == status { break }
            try await Task.sleep(for: .milliseconds(20))
        }
        return clock.now - start
    }

    static func local(_ program: AgentProgram) async throws -> [String: String] {
        Dictionary(uniqueKeysWithValues: try await program.store.orders(status: nil).map { ($0.id, "\($0.status)@\($0.version ?? -1)") })
    }

    static func upstream(_ book: OrderBook) -> [String: String] {
        book.snapshot.mapValues { "\($0.status)@\($0.version)" }
    }

    static func get(_ url: String, _ loop: CurlLoop) async throws -> String {
        String(decoding: try await loop.perform(HTTPRequest(url: url)).body, as: UTF8.self)
    }

    @Test(arguments: Engine.allCases)
    func oneOrderTheBackendCannotServeHoldsNoOtherOrder(_ engine: Engine) async throws {
        // Its retries take 2 + 4 s before it is a dead letter: held behind it, the others would wait 6 s.
        try await Self.withAgent(engine, retryBase: .seconds(2)) { sandbox, program, _, _ in
            let book = sandbox.orders
            let ids = (0..<5).map { _ in book.create() }
            #expect(try await Self.until { try await Self.local(program) == Self.upstream(book) } != nil, "the agent never caught up")
            // The backend cannot serve order 0; the stream announces it changed, then the others.
            book.breakOrder(ids[0], status: 503)
            book.update(ids[0], status: "assigned", announce: .idOnly)
            for id in ids.dropFirst() {
                book.update(id, status: "picked_up", announce: .idOnly)
                let took = try await Self.arrival(of: id, status: "picked_up", in: program)
                #expect(took < .seconds(2), "order \(id) took \(took) behind a bad order")
                // Not held behind it: it arrived while the bad order's job still waits for a retry.
                #expect(try await program.store.deadLetters().isEmpty, "order \(id) arrived only after the bad order gave up")
            }
            // Its attempts count: it becomes a dead letter, and its lane goes on.
            #expect(try await Self.until { try await program.store.deadLetters().count == 1 } != nil)
            #expect(try await program.store.deadLetters().first?.orderID == "\(ids[0])")
            book.healOrder(ids[0])
            book.update(ids[0], status: "delivered", announce: .idOnly)
            #expect(try await Self.until { try await Self.local(program) == Self.upstream(book) } != nil)
        }
    }

    @Test(arguments: Engine.allCases)
    func anOutageLongerThanTheRetryScheduleMakesNoDeadLetterAndRecoversPromptly(_ engine: Engine) async throws {
        try await Self.withAgent(engine, retryBase: .milliseconds(100)) { sandbox, program, push, loop in
            let book = sandbox.orders
            let ids = (0..<4).map { _ in book.create() }
            #expect(try await Self.until { try await Self.local(program) == Self.upstream(book) } != nil, "the agent never caught up")
            // The orders endpoint goes down; the stream stays up and keeps announcing changes.
            book.beginOutage(status: 503)
            for (step, id) in ids.enumerated() { book.update(id, status: "step\(step)", announce: .idOnly) }
            #expect(try await Self.until { program.state.snapshot.backendUnavailableSince != nil } != nil, "no pause")
            let readiness = try await Self.get(push + "/readyz", loop)
            #expect(readiness.contains(#""ready":true"#) && readiness.contains("backend unavailable since"), "\(readiness)")
            #expect(try await Self.get(push + "/metrics", loop).contains("orderlive_sync_backend_available 0"))
            // Ten times the whole retry schedule (100 + 200 ms), with more changes coming.
            let clock = ContinuousClock()
            let end = clock.now.advanced(by: .seconds(3))
            while clock.now < end {
                book.update(ids[0], status: "moving", announce: .idOnly)
                try await Task.sleep(for: .milliseconds(300))
            }
            #expect(try await program.store.deadLetters().isEmpty, "an outage is not a failure of the orders")
            #expect(try await program.store.pendingJobs(limit: 100).allSatisfy { $0.attempts == 0 }, "no attempt counted")
            let metrics = try await Self.get(push + "/metrics", loop)
            #expect(metrics.contains("orderlive_sync_jobs_total{kind=\"fetch\",outcome=\"backend_unavailable\"}"))
            book.endOutage()
            let converged = try await Self.until(.seconds(10)) { try await Self.local(program) == Self.upstream(book) } ?? .seconds(10)
            #expect(converged <= .seconds(3), "converged after \(converged); bound 1 s + 2 s")
            #expect(try await program.store.deadLetters().isEmpty)
            #expect(try await Self.until { program.state.snapshot.backendUnavailableSince == nil } != nil)
            let after = try await Self.get(push + "/metrics", loop)
            #expect(after.contains("orderlive_sync_backend_available 1"))
            let paused = after.split(separator: "\n").first { $0.hasPrefix("orderlive_sync_paused_seconds_total ") }
            let seconds = paused.flatMap { Double($0.split(separator: " ").last ?? "") } ?? 0
            #expect(seconds >= 2.5, "paused for about 3 s: \(paused ?? "no such line")")
        }
    }
}

/// A hard kill while a lane waits for its retry with a change held behind it: the restarted agent
/// replays the journal to the same state, in the same per-order order (issue 54).
@Suite(.timeLimit(.minutes(5))) struct LaneKillTests {
    static func count(_ sql: String, in state: String) throws -> Int {
        let database = try DatabaseQueue(path: state + "/orderlive.sqlite")
        return try database.read { db in try Int.fetchOne(db, sql: sql) ?? -1 }
    }

    @Test func aKillWhileALaneWaitsReplaysToTheSameState() async throws {
        let state = FileManager.default.temporaryDirectory.appendingPathComponent("orderlive-lanekill-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: state) }
        let sandboxConfiguration = SandboxConfiguration(
            port: 0, auth: SandboxAuthConfiguration(requiresAuthentication: true), feed: .orderBook)
        try await Sandbox.withRunning(sandboxConfiguration) { sandbox in
            let book = sandbox.orders
            let (bad, good) = (book.create(), book.create())
            let environment = [
                "ORDERLIVE_STORE_STATE_DIR": state, "ORDERLIVE_INGEST_LISTEN": "127.0.0.1:0", "ORDERLIVE_LOG_FORMAT": "json",
                "ORDERLIVE_UPSTREAM_BASE_URL": await sandbox.baseURL, "ORDERLIVE_AUTH_IDENTIFIER": SandboxUser.demo.identifier,
                "ORDERLIVE_AUTH_PASSWORD": SandboxUser.demo.password, "ORDERLIVE_SYNC_RETRY_INITIAL_MS": "1500",
                "ORDERLIVE_STREAM_MAX_DELAY_MS": "500",
            ]
            let loop = try CurlLoop(logger: quietLogger)
            func start() async throws -> (RunningAgent, String) {
                let agent = try RunningAgent([], environment: environment)
                let listening = try #require(await agent.logs.wait(message: "push endpoint listening"))
                return (agent, "http://" + (listening.line["push.listen"] ?? "") + "/api/push")
            }
            var (agent, push) = try await start()
            #expect(await eventually(within: .seconds(30)) { try Self.count(#"SELECT COUNT(*) FROM "order""#, in: state) == 2 })

            // The bad order's fetch fails and waits; a whole order pushed for it waits behind it.
            book.breakOrder(bad, status: 503)
            book.update(bad, status: "assigned", announce: .idOnly)
            #expect(await eventually(within: .seconds(30)) { try Self.count("SELECT COUNT(*) FROM job WHERE attempts > 0", in: state) == 1 })
            let body = #"{"notifications":[{"tokens":["t"],"platform":2,"data":{"type":"order.updated","order":{"id":\#(bad),"status":"pushed","version":100}}}]}"#
            let answer = try await loop.perform(HTTPRequest(
                url: push, method: "POST", headers: ["Content-Type": "application/json"], body: Array(body.utf8)))
            #expect(answer.status == 200)
            book.update(good, status: "picked_up", announce: .idOnly)
            #expect(await eventually(within: .seconds(30)) {
                try Self.count(#"SELECT COUNT(*) FROM "order" WHERE status = 'picked_up'"#, in: state) == 1
            }, "the other order is not held")
            #expect(try Self.count("SELECT COUNT(*) FROM job", in: state) == 2, "the fetch and the push behind it wait")
            agent.child.signal(SIGKILL)
            _ = await agent.finish()

            book.healOrder(bad)
            (agent, push) = try await start()
            #expect(await eventually(within: .seconds(30)) { try Self.count("SELECT COUNT(*) FROM job", in: state) == 0 }, "the journal replays")
            #expect(try Self.count(#"SELECT COUNT(*) FROM "order" WHERE status = 'pushed' AND version = 100"#, in: state) == 1,
                    "the fetch, then the push held behind it, both applied")
            #expect(try Self.count("SELECT COUNT(*) FROM dead_letter", in: state) == 0)
            agent.child.signal(SIGTERM)
            #expect(await agent.finish() == 0)
            await loop.shutdown()
        }
    }
}
