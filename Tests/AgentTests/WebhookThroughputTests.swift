import AsyncSignals
import CurlHTTP
import Foundation
import TestHarnesses
import TestKit
import Testing
import WebhookSigning

/// Outgoing webhooks at the speed of the receiver (issue 59), from a running agent to a receiver that
/// checks every signature: several requests in flight with each order's changes in order, through a
/// SIGKILL; batches signed as one message, a retried batch with its id and bytes (the rate cap:
/// WebhookRateCapTests, run alone).
@Suite(.timeLimit(.minutes(5))) struct WebhookThroughputTests {
    /// An agent with no backend, whose whole-order pushes are applied and delivered, in `state`.
    struct Scene {
        let state: String
        let secretFile: String
        let environment: [String: String]
        let loop: CurlLoop

        init(_ root: String, extra: [String: String] = [:]) throws {
            state = root + "/state"
            try FileManager.default.createDirectory(atPath: state, withIntermediateDirectories: true)
            secretFile = root + "/secret"
            try WebhookDeliveryTests.secret.write(toFile: secretFile, atomically: true, encoding: .utf8)
            environment = [
                "ORDERLIVE_STORE_STATE_DIR": state, "ORDERLIVE_INGEST_LISTEN": "127.0.0.1:0", "ORDERLIVE_LOG_FORMAT": "json",
                "ORDERLIVE_UPSTREAM_BASE_URL": "http://127.0.0.1:9", "ORDERLIVE_STREAM_MAX_DELAY_MS": "1000",
                "ORDERLIVE_WEBHOOKS_RETRY_SCHEDULE": "1s,1s,1s,1s,1s",
                // A proxy that does not exist, in the variable libcurl reads: with webhooks.proxy empty,
                // deliveries go direct all the same (the configuration decides, not the environment).
                "http_proxy": "http://127.0.0.1:9",
            ].merging(extra) { $1 }
            loop = try CurlLoop(logger: quietLogger)
        }

        func start() async throws -> (RunningAgent, String) {
            let agent = try RunningAgent([], environment: environment)
            let listening = try #require(await agent.logs.wait(message: "push endpoint listening"))
            return (agent, "http://" + (listening.line["push.listen"] ?? "") + "/api/push")
        }

        /// Adds an endpoint with `options`; returns its id.
        func add(_ url: String, _ options: [String]) async throws -> Int64 {
            let (status, said) = try await StoreFileCommandsTests.run(
                ["webhooks", "add", url, "--secret-file", secretFile] + options, in: state, environment: environment)
            #expect(status == 0, "\(said)")
            return try #require(Int64(said.split(separator: "\n").first ?? ""), "\(said)")
        }

        /// One push carrying `orders` (id, version) as whole orders.
        func push(_ orders: [(id: Int, version: Int)], to url: String) async throws {
            let notifications = orders.map { order in
                #"{"tokens":["t"],"platform":2,"data":{"type":"order.updated","order":{"id":\#(order.id),"status":"v\#(order.version)","version":\#(order.version)}}}"#
            }
            let body = #"{"notifications":[\#(notifications.joined(separator: ","))]}"#
            let answer = try await loop.perform(HTTPRequest(
                url: url, method: "POST", headers: ["Content-Type": "application/json"], body: Array(body.utf8)))
            #expect(answer.status == 200, "\(String(decoding: answer.body, as: UTF8.self))")
        }
    }

    static func root(_ label: String) -> String {
        FileManager.default.temporaryDirectory.appendingPathComponent("\(label)-\(UUID().uuidString)").path
    }

    /// The changes a request carried: one object, or a batch's array of them.
    static func changes(_ request: WebhookReceiver.Received) -> [[String: Any]] {
        let parsed = try? JSONSerialization.jsonObject(with: Data(request.body.utf8))
        if let one = parsed as? [String: Any] { return [one] }
        return parsed as? [[String: Any]] ?? []
    }

    static func seq(_ change: [String: Any]) -> Int64 { (change["seq"] as? NSNumber)?.int64Value ?? -1 }

    static func orderAndVersion(_ change: [String: Any]) -> (String, Int)? {
        guard let order = change["order"] as? [String: Any], let id = order["id"] as? NSNumber,
              let version = order["version"] as? NSNumber else { return nil }
        return (id.stringValue, version.intValue)
    }

    /// Each order's versions only go up in `requests`, in the order they were answered.
    static func versionsOnlyGoUp(_ requests: ArraySlice<WebhookReceiver.Received>) -> Bool {
        var last: [String: Int] = [:]
        for change in requests.flatMap(changes) {
            guard let (order, version) = orderAndVersion(change) else { continue }
            if let before = last[order], version <= before { return false }
            last[order] = version
        }
        return true
    }

    /// Each order's changes arrive with rising `seq` in `requests`, in the order they were answered.
    static func seqsOnlyGoUpPerOrder(_ requests: some Sequence<WebhookReceiver.Received>) -> Bool {
        var last: [String: Int64] = [:]
        for change in requests.flatMap(changes) {
            guard let order = (change["order"] as? [String: Any])?["id"].map({ "\($0)" }) ?? change["order_id"] as? String else { continue }
            if let before = last[order], seq(change) <= before { return false }
            last[order] = seq(change)
        }
        return true
    }

    @Test func eightInFlightKeepEachOrdersChangesInOrderAndAKillLosesNothing() async throws {
        let root = Self.root("orderlive-hookpar")
        defer { try? FileManager.default.removeItem(atPath: root) }
        let scene = try Scene(root)
        try await WebhookReceiver.withRunning(secret: WebhookDeliveryTests.secret) { receiver, url in
            receiver.delay(0...50)
            let id = try await scene.add(url, ["--max-in-flight", "8"])
            var (agent, pushURL) = try await scene.start()
            // 20 orders, each updated 6 times: 120 changes, pushed 20 at a time.
            for version in 1...6 { try await scene.push((1...20).map { ($0, version) }, to: pushURL) }
            #expect(await receiver.until { Set($0.flatMap(Self.changes).map(Self.seq)).count >= 60 })
            // Killed with requests in flight: several at once (one at a time never has two waiting).
            receiver.delay(200...300)
            #expect(await receiver.until { _ in receiver.waiting >= 2 }, "more than one request in flight")
            agent.child.signal(SIGKILL)
            _ = await agent.finish()
            let beforeKill = receiver.received.count
            receiver.delay(0...50)
            (agent, pushURL) = try await scene.start()
            for version in 7...8 { try await scene.push((1...20).map { ($0, version) }, to: pushURL) }
            #expect(await receiver.until { Set($0.flatMap(Self.changes).map(Self.seq)).count >= 160 },
                    "\(Set(receiver.received.flatMap(Self.changes).map(Self.seq)).count) of 160")
            agent.child.signal(SIGTERM)
            #expect(await agent.finish() == 0)
            await scene.loop.shutdown()

            let received = receiver.received
            #expect(received.allSatisfy { $0.verified }, "every request signed")
            let seqs = Set(received.flatMap(Self.changes).map(Self.seq))
            let first = try #require(seqs.min())
            #expect(seqs == Set(first...(first + 159)), "every change, none missing")
            #expect(received.allSatisfy { $0.id == "msg_\(id)_\(Self.changes($0).first.map(Self.seq) ?? -1)" }, "one change per request")
            // Within each run of the agent, an order's versions only go up (a restart sends again from
            // the stored low-water mark: duplicates, never a loss).
            let settled = received.prefix(beforeKill).filter { $0.status == 200 }
            #expect(Self.versionsOnlyGoUp(settled[...]))
        }
    }

    @Test func batchesAreOneSignedMessageAndARetriedBatchKeepsItsIDAndBytes() async throws {
        let root = Self.root("orderlive-hookbatch")
        defer { try? FileManager.default.removeItem(atPath: root) }
        let scene = try Scene(root)
        try await WebhookReceiver.withRunning(secret: WebhookDeliveryTests.secret) { receiver, url in
            let id = try await scene.add(url, ["--batch-size", "10", "--batch-ms", "300", "--max-in-flight", "2"])
            let (agent, pushURL) = try await scene.start()
            try await scene.push((1...25).map { ($0, 1) }, to: pushURL)
            #expect(await receiver.until { $0.flatMap(Self.changes).count >= 25 })
            let batches = receiver.received
            #expect(batches.allSatisfy { $0.verified }, "each batch verifies as one message")
            #expect(batches.allSatisfy { Self.changes($0).count <= 10 } && batches.count >= 3, "\(batches.map { Self.changes($0).count })")
            let seqs = batches.flatMap(Self.changes).map(Self.seq)
            #expect(Set(seqs).count == 25)
            for batch in batches {
                let inside = Self.changes(batch).map(Self.seq)
                #expect(inside == inside.sorted(), "in change-log order within a batch")
                #expect(batch.id == "msg_\(id)_\(inside.first ?? -1)-\(inside.last ?? -1)")
            }
            // A batch answered 500 is sent again with the same id and the same bytes.
            receiver.answer(500)
            let before = receiver.received.count
            try await scene.push((1...4).map { ($0, 2) }, to: pushURL)
            #expect(await receiver.until { $0.count >= before + 2 })
            let failed = receiver.received[before]
            let retried = receiver.received[before + 1]
            #expect(failed.status == 500 && retried.status == 200)
            #expect(failed.id == retried.id && failed.body == retried.body, "\(failed.id) \(retried.id)")
            #expect(retried.verified)
            agent.child.signal(SIGTERM)
            #expect(await agent.finish() == 0)
            await scene.loop.shutdown()
        }
    }

    @Test func aShortBatchGoesAtItsTimeWhileAnotherIsInFlight() async throws {
        let root = Self.root("orderlive-hookbatchwait")
        defer { try? FileManager.default.removeItem(atPath: root) }
        let scene = try Scene(root)
        try await WebhookReceiver.withRunning(secret: WebhookDeliveryTests.secret) { receiver, url in
            _ = try await scene.add(url, ["--batch-size", "10", "--batch-ms", "300", "--max-in-flight", "2"])
            let (agent, pushURL) = try await scene.start()
            // The receiver holds every request: the first batch stays in flight.
            receiver.hang(true)
            try await scene.push([(1, 1)], to: pushURL)
            #expect(await receiver.until { _ in receiver.waiting == 1 })
            // A change of another order makes a short batch: it goes after 300 ms, not after the answer.
            try await scene.push([(2, 1)], to: pushURL)
            #expect(await receiver.until(.seconds(10)) { _ in receiver.waiting == 2 }, "the second batch waited for the first's answer")
            receiver.hang(false)
            #expect(await receiver.until { $0.count >= 2 })
            agent.child.signal(SIGTERM)
            #expect(await agent.finish() == 0)
            await scene.loop.shutdown()
        }
    }
}
