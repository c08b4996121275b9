import CurlHTTP
import Foundation
import Sandbox
import Testing
import TestHarnesses
import TestKit

#if canImport(Glibc)
import Glibc
#endif

/// Outgoing webhooks on PostgreSQL (issue 40): the endpoint is kept in the database and shared by the
/// account's agents; only the leader delivers; when it is killed, the new leader continues from the
/// stored cursor and every change arrives, signed, in order.
@Suite(.serialized, .timeLimit(.minutes(5))) struct PostgresWebhookTests {
    /// A throwaway cluster and database, two agents' configurations for `account`, an endpoint added
    /// from the CLI with `options` (its secret in a file), a Sandbox whose orders change only when the
    /// test changes them, and a receiver that checks signatures, for the length of `body`.
    static func withScene(
        _ label: String, account: String, options: [String] = [],
        _ body: @escaping @Sendable (PostgresAgentConfiguration, Sandbox, WebhookReceiver, _ environment: [String: String]) async throws -> Void
    ) async throws {
        try await HeavyScenarios.gate.exclusively {
            let server = try await PostgresServer.running()
            let database = try await server.database()
            let configs = try PostgresAgentConfiguration(label, url: server.url(database: database), account: account, failover: 3)
            defer { configs.remove() }
            let secretFile = configs.directory + "/hook-secret"
            try WebhookDeliveryTests.secret.write(toFile: secretFile, atomically: true, encoding: .utf8)
            let sandbox = SandboxConfiguration(port: 0, auth: SandboxAuthConfiguration(requiresAuthentication: true), feed: .orderBook)
            try await Sandbox.withRunning(sandbox) { sandbox in
                try await WebhookReceiver.withRunning(secret: WebhookDeliveryTests.secret) { receiver, url in
                    let environment = ["ORDERLIVE_UPSTREAM_BASE_URL": await sandbox.baseURL]
                    let adder = try OrderliveProcess(
                        ["webhooks", "add", url, "--secret-file", secretFile] + options + ["--config", try configs.write("first")],
                        environment: environment)
                    var said: [String] = []
                    for await line in adder.lines { said.append(line) }
                    let (added, errors) = await adder.waitForExit()
                    #expect(added == 0 && Int(said.first ?? "") != nil, "\(said) \(errors)")
                    try await body(configs, sandbox, receiver, environment)
                }
            }
        }
    }

    @Test func theNewLeaderContinuesFromTheStoredCursorAfterTheLeaderIsKilled() async throws {
        try await Self.withScene("hooks", account: "hooks-1") { configs, sandbox, receiver, environment in
            let book = sandbox.orders
            let ids = (0..<3).map { _ in book.create() }

            let first = try await PostgresFailoverTests.start("first", configs: configs, environment: environment)
            _ = try #require(await first.logs.wait(message: "this agent leads its account now: it streams and applies"))
            let second = try await PostgresFailoverTests.start("second", configs: configs, environment: environment)
            // The first full sync (3 orders created), then 3 updates: 6 changes.
            for id in ids { book.update(id, status: "assigned") }
            #expect(await receiver.until { Set(WebhookDeliveryTests.seqs($0)).count >= 6 }, "the leader delivers")

            first.child.signal(SIGKILL)
            _ = await first.child.waitForExit()
            _ = try #require(await second.logs.wait(message: "this agent leads its account now: it streams and applies"))
            for id in ids { book.update(id, status: "delivered") }
            #expect(await receiver.until { Set(WebhookDeliveryTests.seqs($0)).count >= 9 },
                    "the new leader delivers: \(WebhookDeliveryTests.seqs(receiver.received))")
            let received = receiver.received
            let allVerified = received.allSatisfy { $0.verified }
            #expect(allVerified)
            let seqs = WebhookDeliveryTests.seqs(received)
            let lowest = try #require(seqs.min())
            #expect(Set(seqs) == Set(lowest...(lowest + 8)), "every change once at least, none missing: \(seqs)")
            var highest = lowest - 1
            for seq in seqs {
                #expect(seq <= highest + 1, "in order: \(seqs)")
                highest = max(highest, seq)
            }
            let statuses = received.compactMap { (WebhookDeliveryTests.field("order", of: $0) as? [String: Any])?["status"] as? String }
            #expect(statuses.suffix(3) == ["delivered", "delivered", "delivered"], "\(statuses)")
            second.child.signal(SIGTERM)
            _ = await second.child.waitForExit()
            await first.reader.value
            await second.reader.value
        }
    }

    /// Issue 59 on PostgreSQL: an endpoint with requests in flight together and batches, its options
    /// kept in the database; the new leader after a kill continues from the stored low-water mark and
    /// every change arrives, each order's in order within each leader's deliveries.
    @Test func parallelBatchedDeliveryContinuesAfterTheLeaderIsKilled() async throws {
        try await Self.withScene("hookspar", account: "hooks-2", options: ["--max-in-flight", "4", "--batch-size", "3"]) { configs, sandbox, receiver, environment in
            receiver.delay(0...30)
            let book = sandbox.orders
            let ids = (0..<6).map { _ in book.create() }

            func changes() -> Set<Int64> { Set(receiver.received.flatMap(WebhookThroughputTests.changes).map(WebhookThroughputTests.seq)) }
            let first = try await PostgresFailoverTests.start("first", configs: configs, environment: environment)
            _ = try #require(await first.logs.wait(message: "this agent leads its account now: it streams and applies"))
            let second = try await PostgresFailoverTests.start("second", configs: configs, environment: environment)
            // The first full sync (6 orders created), then 2 rounds of updates: 18 changes.
            for round in 0..<2 { for id in ids { book.update(id, status: "round-\(round)") } }
            #expect(await receiver.until { _ in changes().count >= 18 }, "the leader delivers: \(changes().sorted())")
            let byFirstLeader = receiver.received.count

            first.child.signal(SIGKILL)
            _ = await first.child.waitForExit()
            _ = try #require(await second.logs.wait(message: "this agent leads its account now: it streams and applies"))
            for id in ids { book.update(id, status: "delivered") }
            #expect(await receiver.until { _ in changes().count >= 24 }, "the new leader delivers: \(changes().sorted())")
            let received = receiver.received
            #expect(received.allSatisfy { $0.verified })
            let seqs = changes()
            let lowest = try #require(seqs.min())
            #expect(seqs == Set(lowest...(lowest + 23)), "every change at least once, none missing: \(seqs.sorted())")
            #expect(received.allSatisfy { WebhookThroughputTests.changes($0).count <= 3 })
            #expect(received.contains { WebhookThroughputTests.changes($0).count > 1 }, "batches were sent")
            #expect(WebhookThroughputTests.seqsOnlyGoUpPerOrder(received.prefix(byFirstLeader)))
            #expect(WebhookThroughputTests.seqsOnlyGoUpPerOrder(received.dropFirst(byFirstLeader)),
                    "a resend after the failover restarts an order's sequence once, then it goes up")
            second.child.signal(SIGTERM)
            _ = await second.child.waitForExit()
            await first.reader.value
            await second.reader.value
        }
    }
}
