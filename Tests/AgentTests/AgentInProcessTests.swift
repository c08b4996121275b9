import Agent
import CurlHTTP
import Foundation
import Logging
import Sandbox
import TestKit
import Testing
import OrderSync
import PushIngest
import StoreModel

/// The whole agent built in this process by the same ``AgentBuilder`` `orderlive run` uses, on port 0,
/// against the Sandbox (STYLE 2: tests call the same builder).
@Suite(.timeLimit(.minutes(5))) struct AgentInProcessTests {
    @Test func theBuiltAgentStreamsAppliesAPushAndStopsOnShutdown() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("orderlive-inprocess-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let sandboxConfiguration = SandboxConfiguration(
            port: 0, auth: SandboxAuthConfiguration(requiresAuthentication: true), feed: .orderBook)
        try await Sandbox.withRunning(sandboxConfiguration) { sandbox in
            let book = sandbox.orders
            let ids = (0..<3).map { _ in book.create() }
            let configuration = await SandboxedAgent.configuration(sandbox, directory: directory)
            let (lines, sink) = AsyncStream.makeStream(of: String.self)
            var logger = Logger(label: "orderlive") { label in JSONLogHandler(label: label, write: { sink.yield($0) }) }
            logger.logLevel = .debug
            let logs = LogWatch()
            let reader = Task { await logs.follow(lines) }

            let program = try AgentBuilder.build(
                configuration: configuration, logger: logger,
                environment: SandboxedAgent.environment)
            let running = Task { try await program.run(handlingSignals: false) }
            let port = try #require(await program.pushServer?.port)
            #expect(port > 0)

            // The stream brings the book's orders in.
            let streamed = try #require(await logs.wait(message: "event journaled", ["stream.event.id": "\(book.latestSequence)"]))
            _ = try #require(await logs.wait(from: streamed.index, message: "journal drained"))
            #expect(Set(try await program.store.orders(status: nil).map(\.id)) == Set(ids.map { "\($0)" }))

            // A change only a push announces.
            book.update(ids[0], status: "delivering", announce: .silent)
            let before = logs.count
            let loop = try CurlLoop(logger: quietLogger)
            let push = try await loop.perform(HTTPRequest(
                url: "http://127.0.0.1:\(port)/api/push", method: "POST", headers: ["Content-Type": "application/json"],
                body: Array(#"{"notifications":[{"tokens":["t"],"platform":2,"data":{"type":"order.status_changed","order_id":\#(ids[0])}}]}"#.utf8)))
            #expect(push.status == 200)
            let applied = try #require(await logs.wait(
                from: before, message: "sync job applied", ["sync.job.kind": "fetch", "sync.job.order_id": "\(ids[0])"]))
            _ = try #require(await logs.wait(from: applied.index, message: "journal drained"))
            #expect(try await program.store.order(id: "\(ids[0])")?.status == "delivering")

            // A push that carries the whole order finds the journal empty: it is stored in the
            // transaction that accepts it, before the 200 (one write, no executor round), and counts
            // as a sync job completed.
            let completed = #"orderlive_sync_jobs_total{kind="upsert",outcome="completed"}"#
            func metrics() async throws -> [String: Double] {
                let response = try await loop.perform(HTTPRequest(url: "http://127.0.0.1:\(port)/metrics"))
                return try #require(prometheusSamples(String(decoding: response.body, as: UTF8.self)))
            }
            let metricsBefore = try await metrics()
            let whole = try await loop.perform(HTTPRequest(
                url: "http://127.0.0.1:\(port)/api/push", method: "POST", headers: ["Content-Type": "application/json"],
                body: Array(#"{"notifications":[{"tokens":["t"],"platform":2,"data":{"type":"order.updated","order":{"id":\#(ids[1]),"status":"delivered","version":1000}}}]}"#.utf8)))
            #expect(whole.status == 200)
            #expect(try await program.store.order(id: "\(ids[1])")?.status == "delivered")
            #expect(try await program.store.counts().journalDepth == 0)
            #expect(try await metrics()[completed] == (metricsBefore[completed] ?? 0) + 1)
            #expect(program.state.snapshot.stream == .open)
            let ready = try await loop.perform(HTTPRequest(url: "http://127.0.0.1:\(port)/readyz"))
            #expect(ready.status == 200)
            await loop.shutdown()

            // Graceful shutdown ends every service; the run returns.
            await program.shutdown()
            try await running.value
            #expect(program.state.snapshot.shuttingDown)
            #expect(!program.state.snapshot.executorRunning)
            sink.finish()
            await reader.value
            let text = logs.raw.joined(separator: "\n")
            #expect(!text.contains(SandboxUser.demo.password))
            #expect(!text.contains("at-") && !text.contains("rt-"), "a token reached the log")
        }
    }
}
