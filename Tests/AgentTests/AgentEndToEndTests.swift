import CurlHTTP
import Foundation
import Logging
import SQLiteStore
import StoreModel
import Sandbox
import Synchronization
import Testing
import TestHarnesses
import TestKit

@Suite(.timeLimit(.minutes(5))) struct AgentEndToEndTests {
    /// A state directory, a password file, an ingest secret and a configuration file in a fresh
    /// temporary directory.
    struct Workspace {
        let directory: String
        let passwordFile: String
        let secretFile: String
        let configFile: String
        let secret = "whsec_" + Data((0..<32).map { _ in UInt8.random(in: 0...255) }).base64EncodedString()

        init() throws {
            directory = FileManager.default.temporaryDirectory.appendingPathComponent("orderlive-e2e-\(UUID().uuidString)").path
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            passwordFile = directory + "/password"
            secretFile = directory + "/ingest-secret"
            configFile = directory + "/orderlive.yaml"
            try Data((SandboxUser.demo.password + "\n").utf8).write(to: URL(fileURLWithPath: passwordFile))
            try Data((secret + "\n").utf8).write(to: URL(fileURLWithPath: secretFile))
            // The file's base_url is wrong on purpose: the environment override must win.
            try Data("""
                upstream:
                  base_url: "http://127.0.0.1:1"
                auth:
                  identifier: "\(SandboxUser.demo.identifier)"
                  password_file: "\(passwordFile)"
                stream:
                  initial_delay_ms: 0
                  max_delay_ms: 200
                ingest:
                  listen: "127.0.0.1:0"
                  auth: "standard-webhooks"
                  secret_file: "\(secretFile)"
                store:
                  state_dir: "\(directory)/state"
                log:
                  level: "debug"
                  format: "json"

                """.utf8).write(to: URL(fileURLWithPath: configFile))
        }

        func environment(baseURL: String) -> [String: String] {
            ["ORDERLIVE_UPSTREAM_BASE_URL": baseURL, "ORDERLIVE_AUTH_REFRESH_AHEAD_S": "1"]
        }

        /// Runs a short-lived `orderlive` command to completion; returns status and stdout.
        func command(_ arguments: [String], environment: [String: String]) async throws -> (Int32, String) {
            let child = try OrderliveProcess(arguments + ["--config", configFile], environment: environment)
            var output: [String] = []
            for await line in child.lines { output.append(line) }
            let (status, errors) = await child.waitForExit()
            return (status, output.joined(separator: "\n") + errors)
        }

        /// `orderlive orders list --json` as id → "status@version".
        func localOrders(environment: [String: String]) async throws -> [String: String] {
            let (status, output) = try await command(["orders", "list", "--json"], environment: environment)
            #expect(status == 0, "orders list failed: \(output)")
            let array = try JSONSerialization.jsonObject(with: Data(output.utf8)) as? [[String: Any]] ?? []
            var result: [String: String] = [:]
            for order in array {
                result["\(order["id"] ?? "")"] = "\(order["status"] ?? "")@\(order["version"] ?? "")"
            }
            return result
        }
    }

    /// Starts the real executable against the Sandbox with a configuration file and environment
    /// overrides; drives changes over the stream (with drops and expired tokens) and through signed
    /// pushes (including a change the stream never announces); checks convergence with `orders list
    /// --json`, readiness, metrics, the JSON logs and their secrets; stops with SIGTERM; restarts and
    /// resumes from the cursor without a full resync.
    @Test func runConvergesThroughDropsExpiriesAndPushesThenResumesAfterSigterm() async throws {
        let workspace = try Workspace()
        defer { try? FileManager.default.removeItem(atPath: workspace.directory) }
        let configuration = SandboxConfiguration(
            port: 0, auth: SandboxAuthConfiguration(accessTokenLifetime: .seconds(2), requiresAuthentication: true),
            feed: .orderBook)
        let loop = try CurlLoop(logger: quietLogger)
        let http = AgentHTTP(loop: loop)
        try await Sandbox.withRunning(configuration) { sandbox in
            let environment = workspace.environment(baseURL: await sandbox.baseURL)
            let book = sandbox.orders
            let ids = (0..<5).map { _ in book.create() }
            // The first two connections are cut in the middle of the replayed log.
            book.dropNextStreams(afterBytes: [150, 420])

            // First run.
            let child = try OrderliveProcess(["run", "--config", workspace.configFile], environment: environment,
                                             readStandardError: true, lifetime: .seconds(120))
            let logs = LogWatch()
            let reader = Task { await logs.follow(child.lines) }
            let listening = try #require(await logs.wait(message: "push endpoint listening"))
            let pushURL = "http://" + (listening.line["push.listen"] ?? "") + "/api/push"
            let agentURL = String(pushURL.dropLast("/api/push".count))
            // Two drops, then a third connection that stays.
            var opened = 0
            for _ in 0..<3 { opened = try #require(await logs.wait(from: opened, message: "stream open")).index + 1 }
            let ready = try await http.get(agentURL + "/readyz")
            #expect(ready.status == 200, "\(ready.body)")
            #expect(ready.body.contains(#""ready":true"#))
            let metricsBefore = try #require(prometheusSamples(try await http.get(agentURL + "/metrics").body))
            // Settled (stream open, journal empty): what only starting needed was given back (DESIGN §9's
            // idle RSS); all that follows runs on from the code pages it released.
            let released = try #require(await logs.wait(message: "startup memory released"))
            #expect(Int(released.line["memory.code_mappings"] ?? "") ?? 0 > 0, "\(released.line)")

            // Changes over the stream: full bodies and id-only events (fetched), with every access
            // token expiring in the middle, so fetches meet 401 and the session refreshes.
            for (step, id) in ids.enumerated() { book.update(id, status: "assigned", announce: step % 2 == 0 ? .fullBody : .idOnly) }
            sandbox.expireAccessTokens()
            for id in ids.prefix(3) { book.update(id, status: "picked_up", announce: .idOnly) }
            book.delete(ids[4])
            let created = book.create(announce: .idOnly)

            // Converged over the stream: every event journaled, then the journal drained.
            let streamed = try #require(await logs.wait(message: "event journaled", ["stream.event.id": "\(book.latestSequence)"]))
            _ = try #require(await logs.wait(from: streamed.index, message: "journal drained"))
            #expect(try await workspace.localOrders(environment: environment)
                == book.snapshot.mapValues { "\($0.status)@\($0.version)" })

            // A change the stream never announces, then announced by a signed push (via push send):
            // only the push can bring it, since no event about the order follows.
            book.update(ids[0], status: "delivering", announce: .silent)
            let version = try #require(book.snapshot["\(ids[0])"]?.version)
            let beforePush = logs.count
            let payload = workspace.directory + "/push.json"
            try Data(#"{"notifications":[{"tokens":["device-1"],"platform":2,"content_available":true,"data":{"type":"order.status_changed","order_id":\#(ids[0]),"version":\#(version)}}]}"#.utf8)
                .write(to: URL(fileURLWithPath: payload))
            let (sent, answer) = try await workspace.command(["push", "send", payload, "--url", pushURL], environment: environment)
            #expect(sent == 0, "\(answer)")
            #expect(answer.contains(#""success":"ok""#))
            let pushJob = try #require(await logs.wait(
                from: beforePush, message: "sync job applied", ["sync.job.kind": "fetch", "sync.job.order_id": "\(ids[0])"]))
            _ = try #require(await logs.wait(from: pushJob.index, message: "journal drained"))
            let upstream = book.snapshot.mapValues { "\($0.status)@\($0.version)" }
            #expect(try await workspace.localOrders(environment: environment) == upstream)
            #expect(upstream["\(ids[0])"] == "delivering@\(version)")
            #expect(upstream["\(created)"] != nil && upstream["\(ids[4])"] == nil)
            try await Self.expectARepeatedWebhookIDAppliedOnce(
                payload, to: pushURL, order: ids[0], logs: logs, workspace: workspace, environment: environment)

            // `status` in another process reads the live stream state the agent records.
            _ = try #require(await logs.wait(message: "stream status recorded", ["stream.state": "open"]))
            let (_, liveStatus) = try await workspace.command(["status", "--json"], environment: environment)
            #expect(liveStatus.contains(#""stream":{"state":"open","cursor":"\#(book.latestSequence)""#), "\(liveStatus)")

            try await Self.expectMetricsMoved(from: metricsBefore, at: agentURL, http: http, orders: upstream.count)

            // SIGTERM: exit 0 well within 10 s.
            let latest = "\(book.latestSequence)"
            let clock = ContinuousClock()
            let stopAsked = clock.now
            child.signal(SIGTERM)
            let (status, _) = await child.waitForExit()
            let stopTook = clock.now - stopAsked
            await reader.value
            #expect(status == 0)
            #expect(stopTook < .seconds(10))
            #expect(logs.lines.last?["message"] == "stopped")
            let (_, stoppedStatus) = try await workspace.command(["status", "--json"], environment: environment)
            #expect(stoppedStatus.contains(#""stream":{"state":"stopped""#), "\(stoppedStatus)")

            // Restart while the backend moved on: resumes from the cursor, no full resync.
            let secondLogs = try await Self.restartResumesFromTheCursor(
                latest, book: book, ids: ids, workspace: workspace, environment: environment)
            try Self.expectJSONLinesWithoutSecrets([logs, secondLogs], workspace: workspace)
        }
        await loop.shutdown()
    }

    /// The same webhook-id twice (the same bytes): accepted both times, its one job applied before the
    /// metrics read the journal's depth.
    static func expectARepeatedWebhookIDAppliedOnce(
        _ payload: String, to pushURL: String, order id: Int, logs: LogWatch, workspace: Workspace, environment: [String: String]
    ) async throws {
        let before = logs.count
        let (first, _) = try await workspace.command(["push", "send", payload, "--url", pushURL, "--id", "msg_e2e"], environment: environment)
        let (twice, _) = try await workspace.command(["push", "send", payload, "--url", pushURL, "--id", "msg_e2e"], environment: environment)
        #expect(first == 0 && twice == 0)
        let job = try #require(await logs.wait(
            from: before, message: "sync job applied", ["sync.job.kind": "fetch", "sync.job.order_id": "\(id)"]))
        _ = try #require(await logs.wait(from: job.index, message: "journal drained"))
    }

    /// A second run after the backend moved on: it resumes from the cursor the first left
    /// (`latest`), catches up, stops with exit 0, and never runs a full sync. Returns its logs.
    static func restartResumesFromTheCursor(
        _ latest: String, book: OrderBook, ids: [Int], workspace: Workspace, environment: [String: String]
    ) async throws -> LogWatch {
        book.update(ids[1], status: "delivered")
        book.update(ids[2], status: "delivered", announce: .idOnly)
        let second = try OrderliveProcess(["run", "--config", workspace.configFile], environment: environment,
                                          readStandardError: true, lifetime: .seconds(60))
        let secondLogs = LogWatch()
        let secondReader = Task { await secondLogs.follow(second.lines) }
        let resumed = try #require(await secondLogs.wait(message: "stream open"))
        #expect(resumed.line["stream.cursor"] == latest)
        let newest = "\(book.latestSequence)"
        let caughtUp = try #require(await secondLogs.wait(message: "event journaled", ["stream.event.id": newest]))
        _ = try #require(await secondLogs.wait(from: caughtUp.index, message: "journal drained"))
        #expect(try await workspace.localOrders(environment: environment)
            == book.snapshot.mapValues { "\($0.status)@\($0.version)" })
        second.signal(SIGTERM)
        let (secondStatus, _) = await second.waitForExit()
        await secondReader.value
        #expect(secondStatus == 0)
        #expect(!secondLogs.lines.contains { $0["message"] == "full sync finished" })
        #expect(!secondLogs.lines.contains { ($0["sync.job.kind"] ?? "") == "full_sync" })
        return secondLogs
    }

    /// The run's metrics moved as its pushes, events and jobs say, from `before`.
    static func expectMetricsMoved(from before: [String: Double], at agentURL: String, http: AgentHTTP, orders: Int) async throws {
        let metricsText = try await http.get(agentURL + "/metrics").body
        let after = try #require(prometheusSamples(metricsText), "not Prometheus text:\n\(metricsText)")
        func moved(_ name: String) -> Double { (after[name] ?? 0) - (before[name] ?? 0) }
        #expect(moved("orderlive_stream_events_total") >= 10)
        #expect((after["orderlive_stream_reconnects_total"] ?? 0) >= 2)
        #expect(moved(#"orderlive_push_requests_total{outcome="accepted"}"#) == 2)
        #expect(moved(#"orderlive_push_requests_total{outcome="duplicate"}"#) == 1)
        #expect(moved(#"orderlive_sync_jobs_total{kind="fetch",outcome="completed"}"#) >= 4)
        #expect((after[#"orderlive_auth_events_total{event="refresh_succeeded"}"#] ?? 0) >= 1)
        #expect(after["orderlive_journal_depth"] == 0)
        #expect(after["orderlive_orders"] == Double(orders))
    }

    /// Every line of the runs is a JSON object with the four fields; no secret anywhere: the user's
    /// password, the ingest secret (with and without `whsec_`), the tokens the agent stored.
    static func expectJSONLinesWithoutSecrets(_ runs: [LogWatch], workspace: Workspace) throws {
        let all = runs.flatMap(\.lines)
        #expect(runs.allSatisfy { $0.unparsable.isEmpty }, "\(runs.flatMap(\.unparsable))")
        for line in all {
            #expect(["time", "level", "label", "message"].allSatisfy { line[$0] != nil }, "\(line)")
        }
        let credentials = try String(contentsOfFile: workspace.directory + "/state/credentials.json", encoding: .utf8)
        let tokens = try #require(try JSONSerialization.jsonObject(with: Data(credentials.utf8)) as? [String: Any])
        var secrets = [SandboxUser.demo.password, workspace.secret, String(workspace.secret.dropFirst(6))]
        for key in ["access_token", "refresh_token"] { if let token = tokens[key] as? String { secrets.append(token) } }
        #expect(secrets.count == 5, "credentials.json keys: \(tokens.keys.sorted())")
        let text = all.map { $0.description }.joined(separator: "\n")
        for secret in secrets { #expect(!text.contains(secret)) }
        #expect(!text.lowercased().contains("bearer "))
    }

    /// Without a session and with the backend unreachable, `run` still serves the push endpoint and
    /// the store, stays ready (the store is open and the executor runs), and says why it is not
    /// syncing; pushes are journaled for when it can.
    @Test func withoutSessionOrBackendItStillServesPushesAndSaysWhy() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("orderlive-nosession-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let environment = [
            "ORDERLIVE_UPSTREAM_BASE_URL": "http://127.0.0.1:1", "ORDERLIVE_STORE_STATE_DIR": directory,
            "ORDERLIVE_INGEST_LISTEN": "127.0.0.1:0", "ORDERLIVE_API_LISTEN": "127.0.0.1:0", "ORDERLIVE_LOG_FORMAT": "json",
        ]
        let child = try OrderliveProcess(["run"], environment: environment, readStandardError: true, lifetime: .seconds(60))
        let logs = LogWatch()
        let reader = Task { await logs.follow(child.lines) }
        let listening = try #require(await logs.wait(message: "push endpoint listening"))
        let base = "http://" + (listening.line["push.listen"] ?? "")
        let loop = try CurlLoop(logger: quietLogger)
        let ready = try await AgentHTTP(loop: loop).get(base + "/readyz")
        #expect(ready.status == 200)
        #expect(ready.body.contains(#""auth":{"state":"unauthenticated"}"#), "\(ready.body)")
        #expect(ready.body.contains("no session: run orderlive login"), "\(ready.body)")
        let push = try await loop.perform(HTTPRequest(
            url: base + "/api/push", method: "POST", headers: ["Content-Type": "application/json"],
            body: Array(#"{"notifications":[{"tokens":["t"],"platform":2,"data":{"type":"order.updated","order_id":9}}]}"#.utf8)))
        #expect(push.status == 200)
        await loop.shutdown()
        child.signal(SIGTERM)
        let (status, _) = await child.waitForExit()
        await reader.value
        #expect(status == 0)
        // The fetch could not run without a session: the job waits in the journal, nothing lost.
        let stopped = try #require(logs.lines.last)
        #expect(stopped["message"] == "stopped")
        #expect(stopped["sync.journal_depth"] == "1", "\(stopped)")
    }

    /// SIGTERM while a slow fetch is in hand: the fetch finishes and is applied, then exit 0. A second
    /// signal during that wait exits at once (130), the job still journaled for the next start.
    @Test(arguments: [false, true])
    func sigtermFinishesTheJobInHandAndASecondSignalExitsAtOnce(secondSignal: Bool) async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("orderlive-sigterm-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let configuration = SandboxConfiguration(
            port: 0, auth: SandboxAuthConfiguration(requiresAuthentication: true), feed: .orderBook)
        try await Sandbox.withRunning(configuration) { sandbox in
            let book = sandbox.orders
            let id = book.create()
            let environment = [
                "ORDERLIVE_UPSTREAM_BASE_URL": await sandbox.baseURL, "ORDERLIVE_STORE_STATE_DIR": directory,
                "ORDERLIVE_AUTH_IDENTIFIER": SandboxUser.demo.identifier, "ORDERLIVE_AUTH_PASSWORD": SandboxUser.demo.password,
                "ORDERLIVE_INGEST_LISTEN": "", "ORDERLIVE_API_LISTEN": "127.0.0.1:0", "ORDERLIVE_LOG_FORMAT": "json", "ORDERLIVE_LOG_LEVEL": "debug",
            ]
            let child = try OrderliveProcess(["run"], environment: environment, readStandardError: true, lifetime: .seconds(60))
            let logs = LogWatch()
            let reader = Task { await logs.follow(child.lines) }
            _ = try #require(await logs.wait(message: "stream open"))
            book.delayFetches([secondSignal ? .seconds(30) : .milliseconds(1500)])
            book.update(id, status: "picked_up", announce: .idOnly)
            _ = try #require(await logs.wait(message: "sync job started", ["sync.job.kind": "fetch"]))
            let clock = ContinuousClock()
            let asked = clock.now
            child.signal(SIGTERM)
            if secondSignal {
                _ = try #require(await logs.wait { $0["message"]?.hasPrefix("stopping") == true })
                child.signal(SIGTERM)
            }
            let (status, _) = await child.waitForExit()
            let took = clock.now - asked
            await reader.value
            let store = try SQLiteOrderStore(path: directory + "/orderlive.sqlite")
            if secondSignal {
                #expect(status == 130)
                #expect(took < .seconds(5))
                #expect(try store.counts().journalDepth == 1, "the interrupted job stays journaled")
            } else {
                #expect(status == 0)
                #expect(took >= .milliseconds(1000) && took < .seconds(10), "\(took)")
                #expect(logs.lines.contains { $0["message"] == "sync job applied" && $0["sync.job.kind"] == "fetch" })
                #expect(try store.order(id: "\(id)")?.status == "picked_up")
                #expect(try store.counts().journalDepth == 0)
            }
        }
    }

    /// A bad configuration stops `run` before it binds anything, naming the key.
    @Test(arguments: [
        ("ingest:\n  listn: \"127.0.0.1:0\"\n", "ingest.listn"),
        ("ingest:\n  max_body_bytes: \"lots\"\n", "ingest.max_body_bytes"),
        ("ingest:\n  auth: \"standard-webhooks\"\n  secret_file: \"/nonexistent/orderlive-secret\"\n", "ingest.secret_file"),
        ("store:\n  durability: \"sometimes\"\n", "store.durability"),
    ])
    func badConfigurationExitsNonZeroNamingTheKey(yaml: String, key: String) async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("orderlive-badconf-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let file = directory + "/orderlive.yaml"
        try Data((yaml + "store:\n  state_dir: \"\(directory)/state\"\n").utf8).write(to: URL(fileURLWithPath: file))
        if yaml.hasPrefix("store:") {
            try Data(("store:\n  state_dir: \"\(directory)/state\"\n  durability: \"sometimes\"\n").utf8)
                .write(to: URL(fileURLWithPath: file))
        }
        let child = try OrderliveProcess(["run", "--config", file], environment: ["ORDERLIVE_LOG_FORMAT": "json"],
                                         readStandardError: true)
        var lines: [String] = []
        for await line in child.lines { lines.append(line) }
        let (status, _) = await child.waitForExit()
        #expect(status != 0)
        #expect(lines.contains { $0.contains(key) }, "\(lines)")
        #expect(!lines.contains { $0.contains("listening") }, "\(lines)")
        #expect(!FileManager.default.fileExists(atPath: directory + "/state/orderlive.sqlite"))
    }
}

@Suite(.timeLimit(.minutes(5))) struct DemoTests {
    /// The demo runs the Sandbox and the agent in one process and shows changes as they land.
    @Test func demoWithJSONShowsOrderChangesReconnectsAndRefreshesThenExitsZero() async throws {
        let child = try OrderliveProcess(["demo", "--duration", "10", "--json", "--rate", "5", "--fault-every", "3"])
        var kinds: [String: Int] = [:]
        var unparsable: [String] = []
        for await line in child.lines {
            guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                  let kind = object["kind"] as? String, object["time"] is String
            else {
                unparsable.append(line)
                continue
            }
            kinds[kind, default: 0] += 1
        }
        let (status, errors) = await child.waitForExit()
        #expect(status == 0, "\(errors)")
        #expect(unparsable.isEmpty, "\(unparsable)")
        #expect((kinds["order.created"] ?? 0) >= 3, "\(kinds)")
        #expect((kinds["order.changed"] ?? 0) >= 3, "\(kinds)")
        #expect((kinds["stream.reconnected"] ?? 0) >= 1, "\(kinds)")
        #expect((kinds["auth.refreshed"] ?? 0) >= 1, "\(kinds)")
    }
}
