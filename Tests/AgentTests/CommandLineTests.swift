import Foundation
import OrderStore
import StoreModel
import Sandbox
import Synchronization
import Testing
import TestSupport

/// The built `orderlive` executable, run as a user would run it.
struct OrderliveProcess {
    let process = Process()
    let lines: AsyncStream<String>
    private let errorPipe = Pipe()

    /// The executable next to the test bundle (both are products of the same build).
    static var executable: URL {
        URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("orderlive")
    }

    /// `openFiles` runs the child under that soft and hard `RLIMIT_NOFILE` (set by `sh`'s `ulimit`
    /// before it execs the agent), as a machine with a low limit would.
    init(_ arguments: [String], environment: [String: String] = [:], input: String? = nil, readStandardError: Bool = false,
         openFiles: (soft: Int, hard: Int)? = nil) throws {
        if let openFiles {
            process.executableURL = URL(fileURLWithPath: "/bin/sh")
            process.arguments = ["-c", "ulimit -Sn \(openFiles.soft) && ulimit -Hn \(openFiles.hard) && exec \"$0\" \"$@\"",
                                 Self.executable.path] + arguments
        } else {
            process.executableURL = Self.executable
            process.arguments = arguments
        }
        // Tests run agents side by side: the orders API takes a free port unless a test picks one.
        process.environment = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("ORDERLIVE_") }
            .merging(["ORDERLIVE_API_LISTEN": "127.0.0.1:0"]) { $1 }
            .merging(environment) { $1 }
        if let input {
            let stdin = Pipe()
            process.standardInput = stdin
            stdin.fileHandleForWriting.write(Data(input.utf8))
            try? stdin.fileHandleForWriting.close()
        }
        let output = Pipe()
        if readStandardError {
            process.standardOutput = FileHandle.nullDevice
            process.standardError = output
        } else {
            process.standardOutput = output
            process.standardError = errorPipe
        }
        let (stream, continuation) = AsyncStream.makeStream(of: String.self)
        lines = stream
        try process.run()
        let reader = output.fileHandleForReading
        let process = self.process
        // A plain thread reads the child's stdout, so the test can wait on each line as it arrives.
        Thread.detachNewThread {
            var buffer = Data()
            Self.drain(reader, untilExitOf: process) { chunk in
                buffer.append(chunk)
                while let newline = buffer.firstIndex(of: 0x0A) {
                    continuation.yield(String(decoding: buffer[buffer.startIndex..<newline], as: UTF8.self))
                    buffer.removeSubrange(buffer.startIndex...newline)
                }
            }
            continuation.finish()
        }
    }

    /// Reads `handle` until its end, or until `process` has exited and nothing more arrives: a
    /// process the child started can hold the pipe open after it (the crash backtracer does, and
    /// was seen to hang for minutes), and waiting for the end of the file then never returns.
    static func drain(_ handle: FileHandle, untilExitOf process: Process, _ chunk: (Data) -> Void) {
        var descriptor = pollfd(fd: handle.fileDescriptor, events: Int16(POLLIN), revents: 0)
        var bytes = [UInt8](repeating: 0, count: 65_536)
        while true {
            let ready = poll(&descriptor, 1, 200)
            if ready < 0 && errno == EINTR { continue }
            if ready > 0 {
                let count = Glibc.read(handle.fileDescriptor, &bytes, bytes.count)
                if count < 0 && errno == EINTR { continue }
                guard count > 0 else { return }
                chunk(Data(bytes[0..<count]))
            } else if ready < 0 || !process.isRunning {
                // Exited, and everything it wrote was already in the pipe: nothing more will come.
                return
            }
        }
    }

    func signal(_ number: Int32) {
        kill(process.processIdentifier, number)
    }

    /// Waits for exit; returns the status and everything written to stderr. The wait blocks, so it
    /// runs off the cooperative pool (``offThePool(_:)``).
    func waitForExit() async -> (status: Int32, stderr: String) {
        let process = self.process
        let errorPipe = self.errorPipe
        return await offThePool {
            var errors = Data()
            if process.standardError as? Pipe === errorPipe {
                Self.drain(errorPipe.fileHandleForReading, untilExitOf: process) { errors.append($0) }
            }
            process.waitUntilExit()
            return (process.terminationStatus, String(decoding: errors, as: UTF8.self))
        }
    }
}

@Suite struct CommandLineTests {
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

        let store = try OrderStore(path: state + "/orderlive.sqlite")
        for (id, status) in [(10, "delivered"), (2, "assigned")] {
            try store.applyUpsert(OrderRecord.parse(["id": id, "status": status, "version": 1, "extra": "kept"], appliedAt: 1))
        }
        try store.journal([NewJob(kind: .fetch, orderID: "3", source: "test")], cursor: "77")
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
            let store = try OrderStore(path: state + "/orderlive.sqlite")
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

/// `orderlive run` as a child, its stderr followed as log lines, killed after `limit` if it hangs.
struct RunningAgent {
    let child: OrderliveProcess
    let logs = LogWatch()
    let reader: Task<Void, Never>
    let watchdog: Task<Void, any Error>

    init(_ arguments: [String], environment: [String: String], limit: Duration = .seconds(60),
         openFiles: (soft: Int, hard: Int)? = nil) throws {
        let child = try OrderliveProcess(["run"] + arguments, environment: environment, readStandardError: true, openFiles: openFiles)
        let logs = self.logs
        self.child = child
        reader = Task { await logs.follow(child.lines) }
        watchdog = Task { try await Task.sleep(for: limit); child.signal(SIGKILL) }
    }

    /// Waits for the child to exit and its output to be read; cancels the watchdog.
    func finish() async -> Int32 {
        let (status, _) = await child.waitForExit()
        await reader.value
        watchdog.cancel()
        return status
    }
}
