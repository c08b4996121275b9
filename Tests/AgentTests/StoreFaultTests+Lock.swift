import Agent
import CurlHTTP
import Foundation
import GRDB
import Logging
import Sandbox
import TestKit
import Testing
import PushIngest

extension StoreFaultTests {
    /// Issue 41 on SQLite: another process holds the database's write lock (a `sqlite3` shell left in
    /// a transaction, a backup tool). A push never waits past `ingest.read_timeout_ms` for the journal
    /// — it gets `503` — `/readyz` answers at once and says why, and when the lock goes the agent
    /// accepts pushes again by itself, having lost none it acknowledged.
    @Test func aLockedDatabaseGetsPushesA503WithinTheReadTimeoutAndNothingAcknowledgedIsLost() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("orderlive-locked-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try await Sandbox.withRunning(SandboxConfiguration(port: 0, feed: .orderBook)) { sandbox in
            let book = sandbox.orders
            let ids = (0..<3).map { _ in book.create() }
            let agent = try await DeadLetterRetryAgentTests.Agent(sandbox, directory: directory) {
                $0.ingest.readTimeout = .seconds(3)
                $0.sync.maximumAttempts = OrderliveConfiguration().sync.maximumAttempts
            }
            let port = try #require(await agent.program.pushServer?.port)
            let loop = try CurlLoop(logger: quietLogger)
            // The agent stops before the Sandbox does, whatever happens here.
            do {
                try await Self.scenario(port: port, ids: ids, directory: directory, loop: loop)
            } catch {
                Issue.record("the scenario failed: \(error)")
            }
            await loop.shutdown()
            try await agent.stop()
        }
    }

    /// Pushes before, during and after the lock; `/readyz` during it.
    static func scenario(port: Int, ids: [Int], directory: String, loop: CurlLoop) async throws {
        let clock = ContinuousClock()
        var number = 0
        func push() async throws -> (status: Int, took: Duration, id: String) {
            number += 1
            return try await Self.push(number, order: ids[number % 3], port: port, loop: loop)
        }
        var accepted: [String] = []
        // The agent may still be starting (its first full sync writes too): a push before the lock
        // is accepted, if not at once then within a few tries.
        var before = try await push()
        for _ in 0..<10 where before.status != 200 { before = try await push() }
        #expect(before.status == 200)
        if before.status == 200 { accepted.append(before.id) }

        // Another process's write transaction holds the lock.
        var unsafe = Configuration()
        unsafe.allowsUnsafeTransactions = true
        let other = try DatabaseQueue(path: directory + "/orderlive.sqlite", configuration: unsafe)
        try await other.writeWithoutTransaction { try $0.execute(sql: "BEGIN IMMEDIATE") }
        var answers: [(status: Int, took: Duration, id: String)] = []
        for _ in 0..<3 { answers.append(try await push()) }
        async let first = Self.push(100, order: ids[0], port: port, loop: loop)
        async let second = Self.push(101, order: ids[1], port: port, loop: loop)
        answers += [try await first, try await second]
        #expect(answers.allSatisfy { $0.status == 503 && $0.took < .milliseconds(4_500) },
                "a push waits at most ingest.read_timeout_ms (3 s) for a locked journal: \(answers)")
        let sent = clock.now
        let ready = try await loop.perform(HTTPRequest(url: "http://127.0.0.1:\(port)/readyz"))
        #expect(clock.now - sent < .seconds(1))
        #expect(ready.status == 503 && String(decoding: ready.body, as: UTF8.self).contains("cannot be written"),
                "\(String(decoding: ready.body, as: UTF8.self))")

        // The lock goes: pushes are accepted again, with nothing to restart.
        try await other.writeWithoutTransaction { try $0.execute(sql: "COMMIT") }
        var after = try await push()
        for _ in 0..<20 where after.status != 200 {
            try await Task.sleep(for: .milliseconds(200))
            after = try await push()
        }
        #expect(after.status == 200)
        if after.status == 200 { accepted.append(after.id) }
        let kept = try await other.read { db in
            try String.fetchAll(db, sql: "SELECT id FROM dedupe_key WHERE id LIKE 'notification:%'")
        }.map { String($0.dropFirst("notification:".count)) }
        #expect(Set(accepted).isSubset(of: Set(kept)), "acknowledged but not kept: \(Set(accepted).subtracting(kept))")
        try other.close()
    }

    /// A push with `notif_id` `lock-N`: its status, how long it took and the id.
    static func push(_ number: Int, order: Int, port: Int, loop: CurlLoop) async throws -> (status: Int, took: Duration, id: String) {
        let clock = ContinuousClock()
        let id = "lock-\(number)"
        let sent = clock.now
        let answer = try await loop.perform(HTTPRequest(
            url: "http://127.0.0.1:\(port)/api/push", method: "POST", headers: ["Content-Type": "application/json"],
            body: Array(#"{"notifications":[{"tokens":["t"],"platform":2,"notif_id":"\#(id)","data":{"type":"order.updated","order_id":\#(order)}}]}"#.utf8)))
        return (answer.status, clock.now - sent, id)
    }
}
