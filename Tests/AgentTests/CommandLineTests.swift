import Foundation
import SQLiteStore
import StoreModel
import Sandbox
import Synchronization
import TestHarnesses
import Testing
import TestKit

@Suite(.timeLimit(.minutes(5))) struct CommandLineTests {
    @Test func sighupReconnectsWithoutAnErrorLineAndSigtermExitsZero() async throws {
        try await Sandbox.withRunning { sandbox in
            sandbox.enqueue(
                .stream("id: 1\ndata: a\n\n", then: [.hold]),
                .stream("data: b\n\n", then: [.hold]))
            let url = await sandbox.baseURL + "/v1/events"
            let child = try OrderliveProcess(["inspect", url, "--json", "--initial-delay", "0"])
            var lines: [String] = []
            for await line in child.lines {
                lines.append(line)
                if line.contains(#""data":"a""#) { child.signal(SIGHUP) }
                if line.contains(#""data":"b""#) { child.signal(SIGTERM) }
            }
            let (status, stderr) = await child.waitForExit()
            #expect(status == 0, "stderr: \(stderr)")
            #expect(lines == [
                #"{"kind":"open","status":200,"content_type":"text/event-stream"}"#,
                #"{"kind":"event","type":"message","data":"a","id":"1"}"#,
                #"{"kind":"open","status":200,"content_type":"text/event-stream"}"#,
                #"{"kind":"event","type":"message","data":"b","id":"1"}"#,
            ])
            var requests = sandbox.streamRequests.makeAsyncIterator()
            _ = await requests.next()
            #expect(await requests.next()?.header("last-event-id") == "1")
        }
    }

    @Test func usageErrorsExitTwoWithOneLine() async throws {
        for arguments in [["inspect", "not-a-url"], ["inspect", "-H", "broken", "http://127.0.0.1:1/"],
                          ["inspect", "http://127.0.0.1:1/", "--count", "0"], ["inspect"]] {
            let child = try OrderliveProcess(arguments)
            for await _ in child.lines {}
            let (status, stderr) = await child.waitForExit()
            #expect(status == 2, "\(arguments)")
            #expect(!stderr.isEmpty)
            #expect(!stderr.contains("Fatal"), "\(stderr)")
        }
    }

    /// A command's failure is exit 1 with one `orderlive: ` line; a rule of its arguments (checked by
    /// the command's own code in Commands) is a usage error, exit 2, with ArgumentParser's usage.
    @Test func aStoreCommandsFailureExitsOneAndItsArgumentRulesExitTwo() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("orderlive-exits-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let environment = ["ORDERLIVE_STORE_STATE_DIR": directory]
        let cases: [([String], Int32, String)] = [
            (["dead-letters", "show", "999"], 1, "orderlive: no dead letter 999 in the local store"),
            (["dead-letters", "show", "abc"], 2, "'abc' is not a dead letter id"),
            (["dead-letters", "drop"], 2, "name the dead letters to drop (ids), or --all"),
            (["webhooks", "test", "0"], 2, "'0' is not an endpoint id"),
        ]
        for (arguments, expected, message) in cases {
            let child = try OrderliveProcess(arguments, environment: environment, lifetime: .seconds(60))
            for await _ in child.lines {}
            let (status, stderr) = await child.waitForExit()
            #expect(status == expected && stderr.contains(message), "\(arguments): \(status) \(stderr)")
            if expected == 1 { #expect(stderr.split(separator: "\n").count == 1, "\(stderr)") }
        }
    }

    @Test func unreachableHostWithoutReconnectExitsOne() async throws {
        let child = try OrderliveProcess(["inspect", "http://127.0.0.1:1/v1/events", "--no-reconnect"])
        for await _ in child.lines {}
        let (status, stderr) = await child.waitForExit()
        #expect(status == 1)
        let errorLines = stderr.split(separator: "\n")
        #expect(errorLines.count == 1)
        #expect(errorLines.first?.hasPrefix("orderlive: ") == true)
    }

    @Test func loginStatusAndLogoutAgainstTheSandbox() async throws {
        try await Sandbox.withRunning { sandbox in
            let state = FileManager.default.temporaryDirectory.appendingPathComponent("orderlive-cli-\(UUID().uuidString)").path
            defer { try? FileManager.default.removeItem(atPath: state) }
            let environment = ["ORDERLIVE_UPSTREAM_BASE_URL": await sandbox.baseURL, "ORDERLIVE_STORE_STATE_DIR": state]
            func run(_ arguments: [String], input: String? = nil) async throws -> (Int32, [String], String) {
                let child = try OrderliveProcess(arguments, environment: environment, input: input)
                var lines: [String] = []
                for await line in child.lines { lines.append(line) }
                let (status, stderr) = await child.waitForExit()
                return (status, lines, stderr)
            }
            let user = SandboxUser.demo
            let rejected = try await run(["login", "--identifier", user.identifier, "--password-stdin"], input: "wrong\n")
            #expect(rejected.0 == 1)
            #expect(rejected.2.contains("rejected the identifier or password"))

            let login = try await run(["login", "--identifier", user.identifier, "--password-stdin"], input: user.password + "\n")
            #expect(login.0 == 0, "\(login.2)")
            #expect(login.1.first == "Logged in as \(user.identifier): user 5, role courier, stores 1, 2.")

            let status = try await run(["status", "--json"])
            #expect(status.0 == 0)
            let json = status.1.joined()
            #expect(json.hasPrefix(#"{"auth":{"state":"authenticated","user_id":5,"role":"courier","store_ids":[1,2],"#))
            #expect(!json.contains("at-") && !json.contains("rt-"), "status must never show a token")

            let logout = try await run(["logout"])
            #expect(logout.0 == 0)
            #expect(sandbox.authCounters.logouts == 1)
            let after = try await run(["status", "--json"])
            #expect(after.1.joined().contains(#""state":"unauthenticated""#))

            let badConfig = try await run(["status", "--config", "/nonexistent.yaml"])
            #expect(badConfig.0 == 1)
            #expect(badConfig.2.contains("/nonexistent.yaml"))
        }
    }

    @Test func ordersListShowAndStatusReadTheLocalStore() async throws {
        let state = FileManager.default.temporaryDirectory.appendingPathComponent("orderlive-orders-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: state, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: state) }
        let environment = ["ORDERLIVE_STORE_STATE_DIR": state]
        func run(_ arguments: [String]) async throws -> (Int32, [String], String) {
            let child = try OrderliveProcess(arguments, environment: environment)
            var lines: [String] = []
            for await line in child.lines { lines.append(line) }
            let (status, stderr) = await child.waitForExit()
            return (status, lines, stderr)
        }
        #expect(try await run(["orders", "list", "--json"]).1 == ["[]"], "no database yet: no orders, nothing created")
        #expect(!FileManager.default.fileExists(atPath: state + "/orderlive.sqlite"))

        let store = try SQLiteOrderStore(path: state + "/orderlive.sqlite")
        for (id, status) in [(10, "delivered"), (2, "assigned")] {
            try store.applyUpsert(OrderRecord.parse(["id": id, "status": status, "version": 1, "extra": "kept"], appliedAt: 1))
        }
        try await store.journal([NewJob(kind: .fetch, orderID: "3", source: "test")], cursor: "77")
        try store.claim(for: "5")

        let list = try await run(["orders", "list", "--json"])
        #expect(list.0 == 0)
        #expect(list.1 == [#"[{"extra":"kept","id":2,"status":"assigned","version":1},{"extra":"kept","id":10,"status":"delivered","version":1}]"#])
        #expect(try await run(["orders", "list", "--status", "delivered"]).1.count == 2, "a header and one row")
        #expect(try await run(["orders", "show", "10", "--json"]).1 == [#"{"extra":"kept","id":10,"status":"delivered","version":1}"#])
        let missing = try await run(["orders", "show", "404"])
        #expect(missing.0 == 1)
        #expect(missing.2.contains("no order 404"))
        let status = try await run(["status", "--json"]).1.joined()
        #expect(status.contains(#""stream":{"state":"stopped","cursor":"77"}"#))
        #expect(status.contains(#""journal":{"depth":1,"#))
        #expect(status.contains(#""dead_letters":0,"orders":2,"owner_user_id":5"#))
    }

    @Test func killedHardTwentyTimesTheAgentStillConvergesWithNothingLost() async throws {
        let configuration = SandboxConfiguration(
            port: 0, auth: SandboxAuthConfiguration(requiresAuthentication: true), feed: .orderBook)
        let state = FileManager.default.temporaryDirectory.appendingPathComponent("orderlive-kill-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: state) }
        try await Sandbox.withRunning(configuration) { sandbox in
            let environment = [
                "ORDERLIVE_UPSTREAM_BASE_URL": await sandbox.baseURL, "ORDERLIVE_STORE_STATE_DIR": state,
                "ORDERLIVE_AUTH_IDENTIFIER": SandboxUser.demo.identifier, "ORDERLIVE_AUTH_PASSWORD": SandboxUser.demo.password,
                "ORDERLIVE_LOG_LEVEL": "debug", "ORDERLIVE_LOG_FORMAT": "text", "ORDERLIVE_INGEST_LISTEN": "", "ORDERLIVE_API_LISTEN": "127.0.0.1:0",
            ]
            var random = SystemRandomNumberGenerator()
            var live: [Int] = []
            func mutate(_ count: Int) {
                for step in 0..<count {
                    let roll = Int.random(in: 0..<10, using: &random)
                    if live.count < 5 || roll < 3 {
                        live.append(sandbox.orders.create(announce: roll % 2 == 0 ? .fullBody : .idOnly))
                    } else if roll < 8, let id = live.randomElement(using: &random) {
                        sandbox.orders.update(id, status: "s\(step)", announce: roll % 2 == 0 ? .fullBody : .idOnly)
                    } else if let index = live.indices.randomElement(using: &random) {
                        sandbox.orders.delete(live.remove(at: index))
                    }
                }
            }
            mutate(200)
            for _ in 0..<20 {
                let child = try OrderliveProcess(["run"], environment: environment, readStandardError: true)
                let killAfter = Int.random(in: 1...12, using: &random)
                var journaled = 0
                for await line in child.lines where line.contains("event journaled") {
                    journaled += 1
                    if journaled == killAfter { child.signal(SIGKILL) }
                }
                _ = await child.waitForExit()
                mutate(15)  // the backend keeps changing while the agent is down
            }
            // A last run that is left to catch up, then stopped gracefully.
            let target = "stream.event.id=\(sandbox.orders.latestSequence)"
            let child = try OrderliveProcess(["run"], environment: environment, readStandardError: true)
            var caughtUp = false
            var stopping = false
            for await line in child.lines {
                if line.contains(target) { caughtUp = true }
                // Once: a second signal means "exit at once" (130).
                if caughtUp, !stopping, line.contains("journal drained") {
                    stopping = true
                    child.signal(SIGTERM)
                }
            }
            let (status, _) = await child.waitForExit()
            #expect(status == 0)
            #expect(caughtUp)
            let store = try SQLiteOrderStore(path: state + "/orderlive.sqlite")
            let local = Dictionary(uniqueKeysWithValues: try store.orders().map { ($0.id, "\($0.status)@\($0.version ?? -1)") })
            let upstream = sandbox.orders.snapshot.mapValues { "\($0.status)@\($0.version)" }
            #expect(local == upstream)
            #expect(try store.counts().journalDepth == 0)
            #expect(try store.counts().deadLetters == 0)
            #expect(try store.streamCursor() == "\(sandbox.orders.latestSequence)")
        }
    }

    @Test func noContentExitsZeroAfterOneRequest() async throws {
        try await Sandbox.withRunning { sandbox in
            sandbox.enqueue(.status(204))
            let child = try OrderliveProcess(["inspect", await sandbox.baseURL + "/v1/events", "--json"])
            var lines: [String] = []
            for await line in child.lines { lines.append(line) }
            let (status, _) = await child.waitForExit()
            #expect(status == 0)
            #expect(lines.isEmpty)
            #expect(sandbox.streamRequestCount == 1)
        }
    }
}
