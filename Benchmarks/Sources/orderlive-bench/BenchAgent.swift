import Agent
import AsyncSignals
import AuthSession
import CurlHTTP
import EventStream
import Foundation
import Logging
import SQLiteStore
import StoreModel
import OrderSync
import PostgresStore
import Sandbox
import ServerSentEvents
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

// An agent under benchmark, as a child process whose log lines the benchmark waits on.

/// An agent in a process of its own, its log lines timestamped as they are read.
final class BenchAgent: Sendable {
    let pid: pid_t
    let log: String
    private let lines = Mutex<[(ContinuousClock.Instant, String)]>([])
    private let done = Mutex(false)

    init(executable: String, arguments: [String], log: String) throws {
        self.log = log
        _ = FileManager.default.createFile(atPath: log, contents: nil)
        pid = try spawnChild([executable] + arguments, output: log)
        Thread.detachNewThread { [self] in follow() }
    }

    /// Reads the log file as it grows.
    private func follow() {
        guard let handle = FileHandle(forReadingAtPath: log) else { return }
        var partial = Data()
        while !done.withLock({ $0 }) {
            let data = handle.availableData
            if data.isEmpty {
                usleep(2_000)
                continue
            }
            let now = ContinuousClock.now
            partial.append(data)
            while let newline = partial.firstIndex(of: 0x0A) {
                let line = String(decoding: partial[partial.startIndex..<newline], as: UTF8.self)
                partial.removeSubrange(partial.startIndex...newline)
                lines.withLock { $0.append((now, line)) }
            }
        }
    }

    var lineCount: Int { lines.withLock { $0.count } }

    /// How many lines read so far contain `text`.
    func count(containing text: String) -> Int {
        lines.withLock { lines in lines.reduce(0) { $0 + ($1.1.contains(text) ? 1 : 0) } }
    }

    /// Waits until `count` lines contain `text`; false after `timeout`.
    func wait(untilCount count: Int, of text: String, timeout: Duration) async -> Bool {
        let deadline = ContinuousClock.now.advanced(by: timeout)
        while ContinuousClock.now < deadline {
            if self.count(containing: text) >= count { return true }
            try? await Task.sleep(for: .milliseconds(5))
        }
        return false
    }

    /// When a line containing `text` (after the first `after` lines) was read; nil after `timeout`.
    func wait(for text: String, after: Int = 0, timeout: Duration) async -> ContinuousClock.Instant? {
        let deadline = ContinuousClock.now.advanced(by: timeout)
        while ContinuousClock.now < deadline {
            let found = lines.withLock { lines in lines.dropFirst(after).first { $0.1.contains(text) }?.0 }
            if let found { return found }
            try? await Task.sleep(for: .milliseconds(5))
        }
        return nil
    }

    /// The first line read that contains `text`.
    func line(containing text: String) -> String? {
        lines.withLock { lines in lines.first { $0.1.contains(text) }?.1 }
    }

    /// The agent the memory benchmarks run, in its own process: `orderlive run --config CONFIGURATION`
    /// when BENCH_AGENT_BINARY names an orderlive executable, else this executable's `memory-agent`.
    static func memoryAgent(configuration: String, log: String) throws -> BenchAgent {
        let binary = ProcessInfo.processInfo.environment["BENCH_AGENT_BINARY"].flatMap { $0.isEmpty ? nil : $0 }
        return try BenchAgent(
            executable: binary ?? benchExecutable,
            arguments: binary == nil ? ["memory-agent", configuration] : ["run", "--config", configuration], log: log)
    }

    /// How the memory benchmarks name the agent they run.
    static var memoryAgentName: String {
        ProcessInfo.processInfo.environment["BENCH_AGENT_BINARY"].flatMap { $0.isEmpty ? nil : "`\($0) run`" }
            ?? "`orderlive run`'s loader and builder in this executable"
    }

    /// The port of the push endpoint, from the agent's `push endpoint listening` line.
    var pushPort: Int? {
        guard let listening = line(containing: "\"push endpoint listening\""),
              let start = listening.firstRange(of: "127.0.0.1:") else { return nil }
        return Int(listening[start.upperBound...].prefix { $0.isNumber })
    }

    func tail() -> String {
        lines.withLock { $0.suffix(10).map(\.1).joined(separator: "\n") }
    }

    func kill() {
        Glibc.kill(pid, SIGKILL)
        var status: Int32 = 0
        _ = waitpid(pid, &status, 0)
        done.withLock { $0 = true }
    }
}

/// `orderlive-bench agent URL BACKEND STATE PASSWORD_FILE FAILOVER_S`: an agent as `orderlive run`
/// builds it, on PostgreSQL for the account `failover`, the Sandbox's demo user, JSON logs on stderr.
func runBenchAgent(_ arguments: [String]) async throws {
    guard arguments.count == 5, let failover = Int(arguments[4]) else {
        throw BenchFailure("usage: orderlive-bench agent POSTGRES_URL BACKEND_URL STATE_DIR PASSWORD_FILE FAILOVER_S")
    }
    var configuration = OrderliveConfiguration()
    configuration.store.stateDirectory = arguments[2]
    configuration.store.backend = .postgres
    configuration.store.postgresURL = arguments[0]
    configuration.store.account = "failover"
    configuration.store.failover = .seconds(failover)
    configuration.upstream.baseURL = arguments[1]
    configuration.auth.identifier = SandboxUser.demo.identifier
    configuration.auth.passwordFile = arguments[3]
    configuration.stream.initialDelay = .milliseconds(0)
    configuration.stream.maximumDelay = .milliseconds(200)
    try await runAgentAsOrderliveRun(configuration)
}

/// Runs `configuration` as `orderlive run` does (its builder, JSON logs on stderr at info) until a
/// signal stops it; the push endpoint on a free loopback port, no orders API.
func runAgentAsOrderliveRun(_ configuration: OrderliveConfiguration) async throws {
    var configuration = configuration
    configuration.ingest.listen = "127.0.0.1:0"
    configuration.api.listen = ""
    LoggingSystem.bootstrap { JSONLogHandler(label: $0) }
    var logger = Logger(label: "orderlive")
    logger.logLevel = .info
    let program = try AgentBuilder.build(configuration: configuration, logger: logger, environment: [:])
    try await program.run(handlingSignals: true)
}
