import AsyncSignals
import CurlHTTP
import Foundation
import GRDB
import SQLiteStore
import StoreModel
import TestKit
import Testing

/// Issue 13, crash safety under load: the real executable is SIGKILLed five times at random points
/// while eight connections post pushes; every push it acknowledged (a 200) is in the store after
/// the last restart. With both durabilities.
@Suite(.timeLimit(.minutes(5))) struct CrashUnderLoadTests {
    /// The notification ids the agent answered 200 for.
    final class Acknowledged: Sendable {
        private let ids = Locked<Set<String>>([])
        func add(_ id: String) { ids.withLock { _ = $0.insert(id) } }
        var all: Set<String> { ids.withLock { $0 } }
        var count: Int { ids.withLock { $0.count } }
    }

    @Test(arguments: ["normal", "full"])
    func everyAcknowledgedPushSurvivesFiveHardKillsUnderLoad(durability: String) async throws {
        let state = FileManager.default.temporaryDirectory.appendingPathComponent("orderlive-crashload-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: state) }
        let environment = [
            "ORDERLIVE_STORE_STATE_DIR": state, "ORDERLIVE_STORE_DURABILITY": durability,
            "ORDERLIVE_INGEST_LISTEN": "127.0.0.1:0", "ORDERLIVE_API_LISTEN": "127.0.0.1:0", "ORDERLIVE_LOG_FORMAT": "json",
            // No backend: the stream retries quietly; the pushes' fetch jobs wait in the journal.
            "ORDERLIVE_UPSTREAM_BASE_URL": "http://127.0.0.1:9", "ORDERLIVE_STREAM_MAX_DELAY_MS": "1000",
        ]
        let acknowledged = Acknowledged()
        var random = SystemRandomNumberGenerator()
        let loop = try CurlLoop(logger: quietLogger)
        for round in 0..<5 {
            let agent = try RunningAgent([], environment: environment)
            let listening = try #require(await agent.logs.wait(message: "push endpoint listening"), "round \(round)")
            let url = "http://" + (listening.line["push.listen"] ?? "") + "/api/push"
            let killAt = acknowledged.count + Int.random(in: 40...400, using: &random)
            // Eight posters, each until its connection is refused (the agent is gone).
            await withTaskGroup(of: Void.self) { posters in
                for poster in 0..<8 {
                    posters.addTask {
                        var sequence = 0
                        while true {
                            sequence += 1
                            let id = "r\(round)-p\(poster)-\(sequence)"
                            let body = #"{"notifications":[{"tokens":["t"],"platform":2,"notif_id":"\#(id)","data":{"type":"order.updated","order_id":\#(sequence)}}]}"#
                            guard let answer = try? await loop.perform(HTTPRequest(
                                url: url, method: "POST", headers: ["Content-Type": "application/json"], body: Array(body.utf8)))
                            else { return }
                            if answer.status == 200 { acknowledged.add(id) }
                            if acknowledged.count >= killAt { agent.child.signal(SIGKILL) }
                        }
                    }
                }
            }
            _ = await agent.finish()
        }
        // The last restart: it opens the store (recovering the WAL) and stops cleanly.
        let last = try RunningAgent([], environment: environment)
        _ = try #require(await last.logs.wait(message: "push endpoint listening"))
        last.child.signal(SIGTERM)
        #expect(await last.finish() == 0)
        await loop.shutdown()

        let database = try DatabaseQueue(path: state + "/orderlive.sqlite")
        let stored = try await database.read { db in
            Set(try String.fetchAll(db, sql: "SELECT substr(id, 14) FROM dedupe_key WHERE id LIKE 'notification:%'"))
        }
        let jobs = try await database.read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM job") ?? 0 }
        let acked = acknowledged.all
        #expect(acked.count >= 200, "the load was too light to mean anything: \(acked.count)")
        let lost = acked.subtracting(stored)
        #expect(lost.isEmpty, "\(lost.count) acknowledged pushes lost, e.g. \(lost.prefix(5))")
        #expect(jobs > 0)
    }
}
