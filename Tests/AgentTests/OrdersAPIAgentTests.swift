import Agent
import AsyncSignals
import CurlHTTP
import Foundation
import Logging
import Sandbox
import TestHarnesses
import TestKit
import Testing
import OrdersAPI
import PushIngest
import StoreModel

#if canImport(Glibc)
import Glibc
#endif

/// The orders API inside the whole agent (DESIGN §11): fed by the executor under concurrent stream
/// events and pushes, refused at start-up when misconfigured, and ended cleanly by SIGTERM.
@Suite(.timeLimit(.minutes(5))) struct OrdersAPIAgentTests {
    @Test func theFeedFollowsStreamAndPushChangesInSeqOrderWithNoGaps() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("orderlive-apifeed-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let sandboxConfiguration = SandboxConfiguration(
            port: 0, auth: SandboxAuthConfiguration(requiresAuthentication: true), feed: .orderBook)
        try await Sandbox.withRunning(sandboxConfiguration) { sandbox in
            let book = sandbox.orders
            for _ in 0..<5 { book.create() }
            let configuration = await SandboxedAgent.configuration(sandbox, directory: directory)
            let program = try AgentBuilder.build(
                configuration: configuration, logger: quietLogger,
                environment: SandboxedAgent.environment)
            let running = Task { try await program.run(handlingSignals: false) }
            let pushPort = try #require(await program.pushServer?.port)
            let apiPort = try #require(await program.apiServer?.port)
            let loop = try CurlLoop(logger: quietLogger)
            let base = "http://127.0.0.1:\(apiPort)"
            let feed = try await FeedReader(loop: loop, url: base + "/v1/orders/stream")
            var view = FeedView()
            for event in try await feed.events(through: "ready") { view.apply(type: event.type, id: event.id, data: event.data) }

            // The stream brings full orders while pushes announce silent changes (fetch jobs), at once.
            async let streamed: Void = {
                var random = SplitMix(state: 7)
                for step in 0..<60 {
                    let ids = Array(book.snapshot.keys.compactMap(Int.init))
                    switch Int.random(in: 0..<7, using: &random) {
                    case 0...2: book.create(status: "created", storeID: 1 + step % 3)
                    case 3: if let id = ids.randomElement(using: &random) { book.delete(id) }
                    default:
                        if let id = ids.randomElement(using: &random) {
                            book.update(id, status: ["assigned", "picked_up", "delivering"].randomElement(using: &random) ?? "assigned")
                        }
                    }
                    try? await Task.sleep(for: .milliseconds(5))
                }
            }()
            async let pushed: Void = {
                var random = SplitMix(state: 11)
                for step in 0..<60 {
                    guard let id = Array(book.snapshot.keys.compactMap(Int.init)).randomElement(using: &random) else { continue }
                    book.update(id, status: "delivered", announce: .silent)
                    let body = #"{"notifications":[{"tokens":["t"],"platform":2,"notif_id":"n\#(step)","data":{"type":"order.status_changed","order_id":\#(id)}}]}"#
                    _ = try? await loop.perform(HTTPRequest(
                        url: "http://127.0.0.1:\(pushPort)/api/push", method: "POST",
                        headers: ["Content-Type": "application/json"], body: Array(body.utf8)))
                }
            }()
            _ = await (streamed, pushed)

            // Wait until the store equals the Sandbox (the agent caught up), then until the feed's
            // view equals GET /v1/orders.
            func local() async throws -> [String: String] {
                Dictionary(uniqueKeysWithValues: try await program.store.orders(status: nil).map { ($0.id, $0.status) })
            }
            #expect(await eventually(within: .seconds(30)) { try await local() == book.snapshot.mapValues(\.status) })
            let list = try await loop.perform(HTTPRequest(url: base + "/v1/orders"))
            let object = try #require(try JSONSerialization.jsonObject(with: Data(list.body)) as? [String: Any])
            var expected: [String: String] = [:]
            for order in try #require(object["orders"] as? [[String: Any]]) { expected["\(order["id"] ?? "")"] = FeedView.canonical(order) }
            while view.orders != expected, let event = try await feed.nextEvent(within: .seconds(10)) {
                view.apply(type: event.type, id: event.id, data: event.data)
            }
            #expect(view.orders == expected)
            let seqs = view.seqs
            #expect(expected.count > 0, "the Sandbox ended with no orders: \(book.snapshot.count)")
            #expect(seqs.count > 60)
            #expect(zip(seqs, seqs.dropFirst()).allSatisfy { $1 == $0 + 1 }, "the feed skipped or repeated a seq")
            #expect(seqs.last == (object["seq"] as? NSNumber)?.int64Value)
            feed.close()
            await loop.shutdown()
            await program.shutdown()
            try await running.value
        }
    }

    @Test func aMisconfiguredAPIIsRefusedAtStartUpNamingTheKey() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("orderlive-apistart-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        func refusal(_ change: (inout OrderliveConfiguration) -> Void) -> String {
            var configuration = OrderliveConfiguration()
            configuration.ingest.listen = ""
            configuration.store.stateDirectory = directory + "/state"
            change(&configuration)
            do {
                _ = try AgentBuilder.build(configuration: configuration, logger: quietLogger, environment: [:])
                return "started"
            } catch {
                return error.description
            }
        }
        #expect(refusal { $0.api.listen = "0.0.0.0:8090" }.contains("api.auth is none but api.listen is not a loopback address"))
        #expect(refusal { $0.api.listen = "0.0.0.0:8090"; $0.api.auth = .bearer }.contains("'api.tokens_file' is not set"))
        let comments = directory + "/tokens"
        try Data("# no tokens yet\n\n".utf8).write(to: URL(fileURLWithPath: comments))
        #expect(refusal { $0.api.auth = .bearer; $0.api.tokensFile = comments }.contains("holds no token"))
        // A consumer's line that does not read: the file and the line, never the token.
        let malformed = directory + "/consumers"
        try Data("good-token-1 name=board stores=1\nsecret-token-2 stores=1,,2\n".utf8).write(to: URL(fileURLWithPath: malformed))
        let said = refusal { $0.api.auth = .bearer; $0.api.tokensFile = malformed }
        #expect(said.contains("'api.tokens_file'") && said.contains("line 2: stores= takes"), "\(said)")
        #expect(!said.contains("secret-token-2") && !said.contains("good-token-1"), "\(said)")
    }

    /// A machine whose hard open-file limit is 4,096 (soft 1,024) cannot hold the default 1,024 push
    /// connections and 10,240 orders API connections. The agent still starts with its defaults, the
    /// API holding the connections (and subscribers) that fit and saying so; a push limit that cannot
    /// fit is still refused, by name.
    @Test func aLowOpenFileLimitShrinksTheSubscriberCapButNeverThePushListeners() async throws {
        let state = FileManager.default.temporaryDirectory.appendingPathComponent("orderlive-nofile-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: state) }
        let environment = [
            "ORDERLIVE_STORE_STATE_DIR": state, "ORDERLIVE_INGEST_LISTEN": "127.0.0.1:0", "ORDERLIVE_API_LISTEN": "127.0.0.1:0",
            "ORDERLIVE_LOG_FORMAT": "json", "ORDERLIVE_UPSTREAM_BASE_URL": "http://127.0.0.1:9",
        ]
        let agent = try RunningAgent([], environment: environment, openFiles: (soft: 1_024, hard: 4_096))
        let warning = try #require(await agent.logs.wait(
            message: "the open-file limit holds fewer orders API connections than api.max_connections"))
        #expect(warning.line["api.max_connections"] == "10240")
        #expect(warning.line["api.connections_held"] == "\(4_096 - 128 - 1_024)")
        #expect(warning.line["api.subscribers_held"] == "\(4_096 - 128 - 1_024)")
        let listening = try #require(await agent.logs.wait(message: "orders API listening"))
        let loop = try CurlLoop(logger: quietLogger)
        let feed = try await FeedReader(loop: loop, url: "http://" + (listening.line["api.listen"] ?? "") + "/v1/orders/stream")
        _ = try await feed.events(through: "ready")
        agent.child.signal(SIGTERM)
        #expect(await agent.finish() == 0)
        await loop.shutdown()

        let refused = try RunningAgent([], environment: environment.merging(["ORDERLIVE_INGEST_MAX_CONNECTIONS": "5000"]) { $1 },
                                       openFiles: (soft: 1_024, hard: 4_096))
        #expect(await refused.finish() != 0)
        #expect(refused.logs.raw.contains { $0.contains("'ingest.max_connections' is 5000, which needs 5128 open files, but the open-file limit is 4096") },
                "\(refused.logs.raw)")
    }

    @Test func sigtermWithAHundredOpenSubscribersExitsZeroWithinTenSeconds() async throws {
        let state = FileManager.default.temporaryDirectory.appendingPathComponent("orderlive-apiterm-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: state) }
        let agent = try RunningAgent([], environment: [
            "ORDERLIVE_STORE_STATE_DIR": state, "ORDERLIVE_INGEST_LISTEN": "", "ORDERLIVE_API_LISTEN": "127.0.0.1:0",
            "ORDERLIVE_LOG_FORMAT": "json", "ORDERLIVE_UPSTREAM_BASE_URL": "http://127.0.0.1:9",
        ])
        let listening = try #require(await agent.logs.wait(message: "orders API listening"))
        let base = "http://" + (listening.line["api.listen"] ?? "")
        let loop = try CurlLoop(logger: quietLogger)
        var feeds: [FeedReader] = []
        for _ in 0..<100 {
            let feed = try await FeedReader(loop: loop, url: base + "/v1/orders/stream")
            _ = try await feed.events(through: "ready")
            feeds.append(feed)
        }
        let clock = ContinuousClock()
        let started = clock.now
        agent.child.signal(SIGTERM)
        let status = await agent.finish()
        let elapsed = clock.now - started
        #expect(status == 0)
        #expect(elapsed < .seconds(10), "took \(elapsed)")
        for feed in feeds {
            // Each stream ended (cleanly, or with the connection closing as the process exits).
            while (try? await feed.next(within: .seconds(5))) != nil {}
            #expect(feed.hasEnded)
        }
        await loop.shutdown()
    }
}
