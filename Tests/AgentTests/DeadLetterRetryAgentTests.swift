import Agent
import AsyncSignals
import CurlHTTP
import Foundation
import Sandbox
import StoreModel
import TestHarnesses
import TestKit
import Testing
import InMemoryLogging
import Logging
import Prometheus
import PushIngest
import SQLiteStore

/// A dead letter made on purpose — the backend answers 503 to a fetch — then found, understood and
/// repaired with `orderlive dead-letters` as an operator would (issue 38): retried while the agent
/// runs (applied within a second, with no restart: the CLI is another process, so nothing wakes the
/// agent's executor but its own look at the journal), retried while it is stopped (applied at the next
/// start), and dropped (never applied).
@Suite(.timeLimit(.minutes(5))) struct DeadLetterRetryAgentTests {
    /// `orderlive ARGUMENTS` as another process over `directory`: its exit status, its output and its errors.
    static func command(_ arguments: [String], in directory: String) async throws -> (status: Int32, output: String) {
        let child = try OrderliveProcess(arguments, environment: ["ORDERLIVE_STORE_STATE_DIR": directory], lifetime: .seconds(60))
        var lines: [String] = []
        for await line in child.lines { lines.append(line) }
        let (status, errors) = await child.waitForExit()
        return (status, lines.joined(separator: "\n") + errors)
    }

    /// An agent in this process over `directory`, against `sandbox`, giving a job up after one failure.
    struct Agent {
        let program: AgentProgram
        let running: Task<Void, any Error>
        let pushURL: String

        init(_ sandbox: Sandbox, directory: String, configure: (inout OrderliveConfiguration) -> Void = { _ in }) async throws {
            var configuration = await SandboxedAgent.configuration(sandbox, directory: directory, api: false)
            configuration.sync.maximumAttempts = 1
            configure(&configuration)
            let program = try AgentBuilder.build(
                configuration: configuration, logger: quietLogger, environment: SandboxedAgent.environment)
            self.program = program
            running = Task { try await program.run(handlingSignals: false) }
            pushURL = "http://127.0.0.1:\(try #require(await program.pushServer?.port))/api/push"
        }

        func stop() async throws {
            await program.shutdown()
            try await running.value
        }

        /// A silent push about `id`: a fetch job.
        func push(_ id: Int, loop: CurlLoop) async throws {
            let body = #"{"notifications":[{"tokens":["t"],"platform":2,"notif_id":"n\#(UUID().uuidString)","data":{"type":"order.status_changed","order_id":\#(id)}}]}"#
            let response = try await loop.perform(HTTPRequest(
                url: pushURL, method: "POST", headers: ["Content-Type": "application/json"], body: Array(body.utf8)))
            #expect(response.status == 200)
        }

        /// Waits until `condition` holds of the store, for at most `limit`; true when it did.
        func until(_ limit: Duration = .seconds(30), _ condition: @Sendable (AgentProgram) async throws -> Bool) async throws -> Bool {
            await eventually(within: limit, every: .milliseconds(10)) { try await condition(program) }
        }
    }

    static func status(_ id: Int, in program: AgentProgram) async throws -> String? {
        try await program.store.order(id: "\(id)")?.status
    }

    /// Makes order `id`'s change on the backend reach the agent only through a fetch that fails once.
    static func failedFetch(of id: Int, _ book: OrderBook, _ agent: Agent, loop: CurlLoop) async throws -> Int64 {
        book.failFetches([503])
        book.update(id, status: "delivered", announce: .silent)
        let before = try await agent.program.store.deadLetters().count
        try await agent.push(id, loop: loop)
        #expect(try await agent.until { try await $0.store.deadLetters().count == before + 1 }, "no dead letter for order \(id)")
        return try #require(try await agent.program.store.deadLetters().last?.id)
    }

    @Test func aDeadLetterFromA503IsListedRetriedOnTheRunningAgentAndAppliedWithinASecond() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("orderlive-retry-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let sandboxConfiguration = SandboxConfiguration(
            port: 0, auth: SandboxAuthConfiguration(requiresAuthentication: true), feed: .orderBook)
        try await Sandbox.withRunning(sandboxConfiguration) { sandbox in
            let book = sandbox.orders
            let (first, second) = (book.create(), book.create())
            let loop = try CurlLoop(logger: quietLogger)
            var agent = try await Agent(sandbox, directory: directory)
            #expect(try await agent.until { try await $0.store.orders(status: nil).count == 2 }, "the agent never caught up")

            // Made, then listed with its cause.
            let id = try await Self.failedFetch(of: first, book, agent, loop: loop)
            #expect(try await Self.status(first, in: agent.program) == "created", "the change did not arrive")
            let (listed, json) = try await Self.command(["dead-letters", "list", "--json"], in: directory)
            #expect(listed == 0, "\(json)")
            let letters = try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [[String: Any]])
            let letter = try #require(letters.first { ($0["id"] as? Int).map(Int64.init) == id })
            #expect(letter["kind"] as? String == "fetch" && letter["order_id"] as? String == "\(first)")
            #expect((letter["last_error"] as? String)?.contains("503") == true, "the cause as the agent saw it: \(letter)")

            // Retried from another process while the agent runs: applied within a second.
            let clock = ContinuousClock()
            let (retried, said) = try await Self.command(["dead-letters", "retry", "\(id)"], in: directory)
            let committed = clock.now
            #expect(retried == 0 && said.contains("Retried 1 dead letter") && said.contains("dead letter retried"), "\(said)")
            #expect(try await agent.until { try await Self.status(first, in: $0) == "delivered" }, "the retry was never applied")
            let applied = clock.now - committed
            #expect(applied < .seconds(1), "applied \(applied) after the retry's commit")
            #expect(try await agent.program.store.deadLetters().isEmpty)

            // Dropped: gone, and its change is never applied.
            let dropped = try await Self.failedFetch(of: second, book, agent, loop: loop)
            let (status, words) = try await Self.command(["dead-letters", "drop", "\(dropped)"], in: directory)
            #expect(status == 0 && words.contains("Dropped 1 dead letter."), "\(words)")
            #expect(try await agent.program.store.pendingJobs(limit: 10).isEmpty, "a dropped dead letter is not journaled")
            #expect(try await Self.status(second, in: agent.program) == "created")

            // Retried while the agent is stopped: journaled, and applied at the next start.
            let waiting = try await Self.failedFetch(of: second, book, agent, loop: loop)
            try await agent.stop()
            let (offline, told) = try await Self.command(["dead-letters", "retry", "--all"], in: directory)
            #expect(offline == 0 && told.contains("Retried 1 dead letter"), "\(waiting): \(told)")
            let (_, journal) = try await Self.command(["journal", "list", "--json"], in: directory)
            #expect(journal.contains("\"order_id\":\"\(second)\"") && journal.contains("\"source\":\"retry\""), "\(journal)")
            agent = try await Agent(sandbox, directory: directory)
            #expect(try await agent.until { try await Self.status(second, in: $0) == "delivered" }, "not applied at the next start")
            #expect(try await agent.program.store.deadLetters().isEmpty)
            try await agent.stop()
            await loop.shutdown()
        }
    }
}

/// `sync.dead_letter_limit`: the newest are kept, the oldest beyond the limit removed with a log line
/// that says how many and a counter.
@Suite(.timeLimit(.minutes(1))) struct DeadLetterRetentionTests {
    @Test func theOldestBeyondTheLimitAreRemovedLoggedAndCounted() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("orderlive-retain-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let store = try StateDirectory(directory).openStore()
        try await store.journal([], cursor: nil, deadLetters: (1...5).map {
            DeadLetterRecord(kind: "event", orderID: "\($0)", raw: "x", reason: "unreadable", attempts: 0, createdAt: 1_000)
        })
        let logs = CapturedLogs()
        let metrics = AgentMetrics()
        let retention = DeadLetterRetention(
            store: store, limit: 3, made: WakeSignal(), pruned: metrics.deadLettersPruned, logger: logs.logger(level: .info))
        await retention.prune()
        #expect(try store.deadLetters().compactMap(\.orderID) == ["3", "4", "5"])
        let line = try #require(logs.entries("the oldest dead letters were removed: more were kept than sync.dead_letter_limit allows").first)
        #expect(line.metadata["dead_letters.removed"] == "2" && line.metadata["sync.dead_letter_limit"] == "3")
        #expect(metrics.registry.emitToString().contains("orderlive_dead_letters_pruned_total 2"))
        await retention.prune()
        #expect(logs.entries.count == 1, "nothing beyond the limit: nothing said")
    }
}
