// The store on PostgreSQL (issue 15, DESIGN §9 and §12), on a throwaway cluster this benchmark starts
// from Debian's packages (`make deps`) with PostgreSQL's default durability (fsync and synchronous
// commit on), each figure next to `pgbench` running the same INSERT into the journal on the same
// server in the same run:
//
// - push ingest at 50 connections (wrk), each request journaled before its 200, the executor
//   applying beside it, against pgbench's 50 clients inserting one job per transaction;
// - stream → committed and applied (full-order events from the Sandbox), against one pgbench client
//   (the stream is one connection, committing serially);
// - failover: two agents, each in its own process (this benchmark re-executed as `agent`); the
//   leader is killed with SIGKILL and the time until the follower logs `stream open` is measured.

import Agent
import AsyncSignals
import AuthSession
import CurlHTTP
import EventStream
import Foundation
import Logging
import OrderStore
import OrderSync
import PostgresStore
import Sandbox
import ServerSentEvents
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

// MARK: The cluster

/// A PostgreSQL cluster in a temporary directory on a free loopback port, trust authentication for
/// `postgres` (run as `postgres` when this process is root, since `initdb` refuses root).
struct BenchCluster {
    let directory: String
    let binaries: String
    let port: Int
    let prefix: [String]

    var url: String { "postgres://postgres@127.0.0.1:\(port)/bench?sslmode=disable" }

    static func start() throws -> BenchCluster? {
        let root = "/usr/lib/postgresql"
        let versions = (try? FileManager.default.contentsOfDirectory(atPath: root)) ?? []
        guard let binaries = versions.compactMap({ Int($0) }).sorted().reversed().map({ "\(root)/\($0)/bin" })
            .first(where: { FileManager.default.isExecutableFile(atPath: $0 + "/initdb") }) else { return nil }
        let directory = NSTemporaryDirectory() + "orderlive-bench-pg-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let prefix = getuid() == 0 ? ["/usr/sbin/runuser", "-u", "postgres", "--"] : []
        if getuid() == 0 { _ = try runToEnd(["/bin/chown", "-R", "postgres:postgres", directory]) }
        let initdb = try runToEnd(prefix + [binaries + "/initdb", "-D", directory + "/data", "--auth=trust",
                                            "--username=postgres", "--encoding=UTF8"])
        guard initdb.status == 0 else { throw BenchFailure("initdb failed: \(initdb.output)") }
        let port = try freeLoopbackPort()
        var options = "-p \(port) -k \(directory) -c listen_addresses=127.0.0.1 -c max_connections=300"
        // BENCH_PG_STATEMENTS=1: the push rounds print pg_stat_statements' top statements.
        if ProcessInfo.processInfo.environment["BENCH_PG_STATEMENTS"] != nil {
            options += " -c shared_preload_libraries=pg_stat_statements -c pg_stat_statements.track_planning=on"
        }
        let started = try runToEnd(prefix + [binaries + "/pg_ctl", "-D", directory + "/data", "-w", "-t", "60",
                                             "-l", directory + "/server.log", "-o", options, "start"])
        guard started.status == 0 else { throw BenchFailure("pg_ctl start failed: \(started.output)") }
        let cluster = BenchCluster(directory: directory, binaries: binaries, port: port, prefix: prefix)
        let created = try runToEnd([binaries + "/createdb", "-h", "127.0.0.1", "-p", "\(port)", "-U", "postgres", "bench"])
        guard created.status == 0 else { throw BenchFailure("createdb failed: \(created.output)") }
        return cluster
    }

    func stop() {
        _ = try? runToEnd(prefix + [binaries + "/pg_ctl", "-D", directory + "/data", "-m", "immediate", "-w", "stop"])
        try? FileManager.default.removeItem(atPath: directory)
    }

    func psql(_ sql: String) throws -> String {
        let run = try runToEnd([binaries + "/psql", "-h", "127.0.0.1", "-p", "\(port)", "-U", "postgres", "-d", "bench",
                                "-X", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-c", sql])
        guard run.status == 0 else { throw BenchFailure("psql failed: \(run.output)") }
        return run.output.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// pgbench: `clients` clients for `seconds`, each transaction the INSERT in `script`; transactions
    /// per second and the p50 and p99 latencies from its per-transaction log.
    func pgbench(script: String, clients: Int, seconds: Int) throws -> (tps: Double, p50: Double, p99: Double) {
        let work = NSTemporaryDirectory() + "orderlive-pgbench-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: work, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: work) }
        try Data(script.utf8).write(to: URL(fileURLWithPath: work + "/insert.sql"))
        let run = try runToEnd([binaries + "/pgbench", "-h", "127.0.0.1", "-p", "\(port)", "-U", "postgres", "-n",
                                "-M", "prepared", "-c", "\(clients)", "-j", "\(min(2, clients))", "-T", "\(seconds)",
                                "-l", "--log-prefix", work + "/log", "-f", work + "/insert.sql", "bench"])
        guard run.status == 0 else { throw BenchFailure("pgbench failed: \(run.output)") }
        var tps = 0.0
        for line in run.output.split(separator: "\n") where line.hasPrefix("tps = ") {
            tps = Double(line.dropFirst("tps = ".count).split(separator: " ").first ?? "") ?? 0
        }
        // Each log line: client, transaction, latency µs, script, epoch s, µs.
        var latencies: [Double] = []
        for file in (try FileManager.default.contentsOfDirectory(atPath: work)) where file.hasPrefix("log") {
            let text = try String(contentsOfFile: work + "/" + file, encoding: .utf8)
            for line in text.split(separator: "\n") {
                let fields = line.split(separator: " ")
                if fields.count > 2, let micros = Double(fields[2]) { latencies.append(micros / 1000) }
            }
        }
        latencies.sort()
        guard !latencies.isEmpty else { return (tps, 0, 0) }
        return (tps, latencies[latencies.count / 2], latencies[min(latencies.count - 1, latencies.count * 99 / 100)])
    }
}

/// CPU seconds the PostgreSQL server has used: its live processes' own and, in the postmaster's
/// children totals, those of the backends that have ended (pgbench's connections end with it).
func postgresServerCPUSeconds() -> Double {
    let ticks = Double(sysconf(Int32(_SC_CLK_TCK)))
    var processes: [Int: (parent: Int, own: Double, children: Double)] = [:]
    for entry in (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? [] {
        guard let pid = Int(entry),
              let stat = try? String(contentsOfFile: "/proc/\(entry)/stat", encoding: .utf8),
              let open = stat.firstIndex(of: "("), let close = stat.lastIndex(of: ")"),
              stat[stat.index(after: open)..<close] == "postgres" else { continue }
        // After the command: state, ppid, ... utime (14), stime, cutime, cstime (17), counted from pid as 1.
        let fields = stat[stat.index(close, offsetBy: 2)...].split(separator: " ")
        guard fields.count > 14, let parent = Int(fields[1]),
              let user = Double(fields[11]), let system = Double(fields[12]),
              let childUser = Double(fields[13]), let childSystem = Double(fields[14]) else { continue }
        processes[pid] = (parent, (user + system) / ticks, (childUser + childSystem) / ticks)
    }
    return processes.values.reduce(0) { total, process in
        total + process.own + (processes[process.parent] == nil ? process.children : 0)
    }
}

struct BenchFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// Runs `arguments` to its end with its output in a file (a long-lived server it starts holds no
/// pipe of ours) and no other descriptor of this process; its exit status and output.
func runToEnd(_ arguments: [String]) throws -> (status: Int32, output: String) {
    let output = NSTemporaryDirectory() + "orderlive-bench-run-\(UUID().uuidString)"
    defer { unlink(output) }
    let child = try spawnChild(arguments, output: output)
    var status: Int32 = 0
    while waitpid(child, &status, 0) < 0 && errno == EINTR {}
    let text = (try? String(contentsOfFile: output, encoding: .utf8)) ?? ""
    return (status & 0x7F == 0 ? (status >> 8) & 0xFF : 128 + (status & 0x7F), text)
}

/// Starts `arguments` with stdin from /dev/null, stdout and stderr to `output`, default signals.
func spawnChild(_ arguments: [String], output: String) throws -> pid_t {
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
    posix_spawn_file_actions_addopen(&actions, 1, output, O_WRONLY | O_CREAT | O_APPEND, 0o644)
    posix_spawn_file_actions_adddup2(&actions, 1, 2)
    typealias CloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32
    if let closeFrom = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "posix_spawn_file_actions_addclosefrom_np") {
        _ = unsafeBitCast(closeFrom, to: CloseFrom.self)(&actions, 3)
    }
    var argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
    defer { for pointer in argv { free(pointer) } }
    // No signal blocked and every signal at its default: this process blocks the ones it waits for,
    // a mask children would inherit (pgbench's -T is a SIGALRM that then never arrives).
    var attributes = posix_spawnattr_t()
    posix_spawnattr_init(&attributes)
    defer { posix_spawnattr_destroy(&attributes) }
    var none = sigset_t()
    sigemptyset(&none)
    posix_spawnattr_setsigmask(&attributes, &none)
    var all = sigset_t()
    sigfillset(&all)
    posix_spawnattr_setsigdefault(&attributes, &all)
    posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
    var child: pid_t = 0
    let spawned = posix_spawn(&child, arguments[0], &actions, &attributes, &argv, environ)
    guard spawned == 0 else { throw BenchFailure("could not start \(arguments[0]): error \(spawned)") }
    return child
}

func freeLoopbackPort() throws -> Int {
    let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard descriptor >= 0 else { throw BenchFailure("socket() failed") }
    defer { close(descriptor) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    let bound = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
    }
    guard bound == 0 else { throw BenchFailure("bind() failed") }
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    _ = withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &length) }
    }
    return Int(UInt16(bigEndian: address.sin_port))
}

/// The journal INSERT a push makes, as pgbench runs it: one whole-order upsert job per transaction.
let pgbenchInsert = """
    \\set n random(1, 1000000000)
    INSERT INTO orderlive_job (account, kind, order_id, version, payload, source, attempts, not_before, last_error,
        created_at, status, store_id, courier_id, updated_at)
    VALUES ('pgbench', 'upsert', :n, 1, '{"id":' || :n || ',"status":"picked_up","version":1,"store_id":1,"courier_id":7}',
        'push', 0, 0, NULL, 1700000000, 'picked_up', '1', '7', NULL);

    """

// MARK: The benchmark

func postgresBenchmark() async throws {
    guard let cluster = try BenchCluster.start() else {
        print("PostgreSQL is not installed: `make deps` installs it, then `BENCH_ONLY=postgres make bench`")
        return
    }
    defer { cluster.stop() }
    let version = try cluster.psql("SHOW server_version")
    print("")
    print("PostgreSQL \(version) on 127.0.0.1, a throwaway cluster, fsync and synchronous_commit on (the defaults)")
    // The schema, as the first agent migrates it.
    let configuration = try PostgresStoreConfiguration(url: cluster.url, password: nil, account: "pgbench")
    let store = PostgresOrderStore(configuration: configuration, logger: quiet)
    try await withThrowingTaskGroup(of: Void.self) { group in
        group.addTask { await store.run() }
        try await store.prepare()
        group.cancelAll()
    }
    // BENCH_POSTGRES_PARTS=ingest (or stream, failover, comma-separated) runs only those parts.
    let parts = Set((ProcessInfo.processInfo.environment["BENCH_POSTGRES_PARTS"] ?? "ingest,stream,failover")
        .split(separator: ",").map { String($0) })
    if parts.contains("ingest") { try await postgresIngest(cluster) }
    if parts.contains("stream") { try await postgresStream(cluster) }
    if parts.contains("failover") { try await postgresFailover(cluster) }
}

/// Push ingest: wrk at 50 connections against the agent (as `orderlive run` builds it) on PostgreSQL,
/// next to pgbench's 50 clients, alternating, twice.
func postgresIngest(_ cluster: BenchCluster) async throws {
    let seconds = Int(ProcessInfo.processInfo.environment["BENCH_INGEST_SECONDS"] ?? "") ?? 10
    let connections = 50
    let script = NSTemporaryDirectory() + "orderlive-push-pg-\(getpid()).lua"
    try Data(wrkScript.utf8).write(to: URL(fileURLWithPath: script))
    defer { try? FileManager.default.removeItem(atPath: script) }
    print("")
    print("push ingest on PostgreSQL: wrk -t2 -c\(connections) -d\(seconds)s, one-notification Gorush requests with a whole order;"
          + " pgbench -c\(connections) -j2 -T\(seconds) with the journal's INSERT, one per transaction")
    print("| round | what | per second | p50 ms | p99 ms | errors | stored/acknowledged | ratio to pgbench "
          + "| CPU µs per request: agent or pgbench / PostgreSQL |")
    print("| --- | --- | ---: | ---: | ---: | ---: | --- | ---: | --- |")
    for round in 1...2 {
        let (referenceBefore, clientBefore) = (postgresServerCPUSeconds(), processCPUSeconds(RUSAGE_CHILDREN))
        let reference = try cluster.pgbench(script: pgbenchInsert, clients: connections, seconds: seconds)
        let transactions = max(1, reference.tps * Double(seconds))
        let referenceCPU = (client: (processCPUSeconds(RUSAGE_CHILDREN) - clientBefore) / transactions * 1e6,
                            server: (postgresServerCPUSeconds() - referenceBefore) / transactions * 1e6)
        print("| \(round) | pgbench, INSERT INTO orderlive_job (reference) | \(format(reference.tps, 0)) | "
              + "\(format(reference.p50, 2)) | \(format(reference.p99, 2)) | 0 | — | 1.00× | "
              + "\(format(referenceCPU.client, 0)) / \(format(referenceCPU.server, 0)) |")
        var configuration = OrderliveConfiguration()
        configuration.store.stateDirectory = NSTemporaryDirectory() + "orderlive-pg-ingest-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: configuration.store.stateDirectory) }
        configuration.store.backend = .postgres
        configuration.store.postgresURL = cluster.url
        configuration.store.account = "ingest-\(round)"
        configuration.ingest.listen = "127.0.0.1:0"
        configuration.api.listen = ""
        configuration.ingest.highWaterJobs = 10_000_000
        configuration.upstream.baseURL = "http://127.0.0.1:1"
        var logger = Logger(label: "orderlive") { JSONLogHandler(label: $0) }
        logger.logLevel = .warning
        let program = try AgentBuilder.build(configuration: configuration, logger: logger, environment: [:])
        guard let server = program.pushServer else { continue }
        let running = Task { try await program.run(handlingSignals: false) }
        let port = await server.port
        // The agent leads its account before the load starts, so its executor applies beside it.
        for _ in 0..<200 where (try? cluster.psql(
            "SELECT COUNT(*) FROM orderlive_leadership WHERE account = '\(configuration.store.account)'")) != "1" {
            try await Task.sleep(for: .milliseconds(25))
        }
        let serverBefore = postgresServerCPUSeconds()
        guard let result = try runWrk(port: port, seconds: seconds, connections: connections, script: script) else {
            print("wrk is not installed: `sudo apt-get install wrk`, then `BENCH_ONLY=postgres make bench`")
            await program.shutdown()
            try await running.value
            return
        }
        let serverCPU = (postgresServerCPUSeconds() - serverBefore) / Double(max(1, result.requests)) * 1e6
        let counts = try await program.store.counts()
        if ProcessInfo.processInfo.environment["BENCH_PG_STATEMENTS"] != nil {
            print(try cluster.psql("""
                CREATE EXTENSION IF NOT EXISTS pg_stat_statements;
                SELECT calls, round(total_exec_time::numeric, 1), round(total_plan_time::numeric, 1), round(mean_exec_time::numeric, 3),
                       left(regexp_replace(query, '\\s+', ' ', 'g'), 110)
                FROM pg_stat_statements ORDER BY total_exec_time DESC LIMIT 25
                """))
            _ = try cluster.psql("SELECT pg_stat_statements_reset()")
        }
        await program.shutdown()
        try await running.value
        let acknowledged = result.requests - result.errors
        let stored = counts.orders + counts.journalDepth
        print("| \(round) | orderlive push endpoint, journaled before the 200 | \(format(result.requestsPerSecond, 0)) | "
              + "\(format(result.p50, 2)) | \(format(result.p99, 2)) | \(result.errors) | "
              + "\(stored) / \(acknowledged)\(stored >= acknowledged ? "" : " LOST") | "
              + "\(format(result.requestsPerSecond / reference.tps, 2))× | "
              + "\(format(result.cpuMicrosecondsPerRequest, 0)) / \(format(serverCPU, 0)) |")
    }
}

/// Stream → committed and applied on PostgreSQL: the Sandbox's full-order events journaled per parser
/// batch by the stream service and applied beside it by the executor (fenced, as a leader does),
/// next to one pgbench client inserting the same jobs one per transaction.
func postgresStream(_ cluster: BenchCluster) async throws {
    let events = 20_000
    let reference = try cluster.pgbench(script: pgbenchInsert, clients: 1, seconds: 5)
    print("")
    print("stream → PostgreSQL, \(events) full-order events (three runs, median); pgbench -c1 -T5 with the journal's INSERT")
    print("| what | per second | ratio to pgbench -c1 |")
    print("| --- | ---: | ---: |")
    print("| pgbench -c1, INSERT INTO orderlive_job, one per transaction (reference) | \(format(reference.tps, 0)) | 1.00× |")
    try await Sandbox.withRunning(SandboxConfiguration(port: 0, feed: .orderBook, orderRetention: events + 10)) { sandbox in
        for _ in 0..<events { sandbox.orders.create() }
        let url = await sandbox.baseURL + "/v1/events"
        let target = "\(sandbox.orders.latestSequence)"
        try await CurlLoop.withLoop(logger: quiet) { loop in
            var account = 0
            for applying in [false, true] {
                let run = try await measure(3) {
                    account += 1
                    let name = "stream-\(account)"
                    _ = try cluster.psql(
                        "INSERT INTO orderlive_leadership (account, epoch, leader, since) VALUES ('\(name)', 1, 'bench', 0)")
                    let store = PostgresOrderStore(
                        configuration: try PostgresStoreConfiguration(url: cluster.url, password: nil, account: name),
                        logger: quiet)
                    return try await withThrowingTaskGroup(of: Void.self) { group in
                        group.addTask { await store.run() }
                        defer { group.cancelAll() }
                        try await store.prepare()
                        store.fence(epoch: 1)
                        let directory = NSTemporaryDirectory() + "orderlive-bench-\(UUID().uuidString)"
                        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
                        defer { try? FileManager.default.removeItem(atPath: directory) }
                        let pipeline = Pipeline(loop: loop, eventsURL: url, store: store, directory: directory)
                        let count = try await pipeline.stream(until: target, applying: applying)
                        if applying {
                            let stored = try await store.counts().orders
                            guard stored == events else { throw BenchFailure("stored \(stored) of \(events)") }
                        } else {
                            let journaled = try await store.counts().journalDepth
                            guard journaled == events else { throw BenchFailure("journaled \(journaled) of \(events)") }
                        }
                        return count
                    }
                }
                let rate = Double(run.count) / run.seconds
                print("| \(applying ? "stream → committed and applied (fenced executor beside the stream)" : "stream → committed (journal only)") "
                      + "| \(format(rate, 0)) | \(format(rate / reference.tps, 2))× |")
            }
        }
    }
}

/// Failover: two agents for one account in their own processes; the leader is killed with SIGKILL
/// and the follower's `stream open` timed from the kill. Five rounds; the killed agent is restarted
/// as the next follower.
func postgresFailover(_ cluster: BenchCluster) async throws {
    let failover = 5
    let sandbox = SandboxConfiguration(port: 0, auth: SandboxAuthConfiguration(requiresAuthentication: true), feed: .orderBook)
    let directory = NSTemporaryDirectory() + "orderlive-bench-failover-\(UUID().uuidString)"
    try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: directory) }
    let passwordFile = directory + "/password"
    try Data((SandboxUser.demo.password + "\n").utf8).write(to: URL(fileURLWithPath: passwordFile))
    print("")
    print("failover on PostgreSQL: two agents (own processes, store.failover_s \(failover)), the leader killed with SIGKILL;"
          + " time from the kill to the follower's `stream open`")
    try await Sandbox.withRunning(sandbox) { sandbox in
        let base = await sandbox.baseURL
        for _ in 0..<20 { sandbox.orders.create() }
        var agents: [BenchAgent] = []
        var started = 0
        func start() throws -> BenchAgent {
            started += 1
            return try BenchAgent(executable: benchExecutable, arguments: [
                "agent", cluster.url, base, directory + "/agent-\(started)", passwordFile, "\(failover)",
            ], log: directory + "/agent-\(started).log")
        }
        defer { for agent in agents { agent.kill() } }
        agents.append(try start())
        guard await agents[0].wait(for: "\"stream open\"", timeout: .seconds(30)) != nil else {
            throw BenchFailure("the first agent never streamed: \(agents[0].tail())")
        }
        agents.append(try start())
        var times: [Double] = []
        for round in 1...5 {
            guard await agents[1].wait(for: "\"push endpoint listening\"", timeout: .seconds(30)) != nil else {
                throw BenchFailure("the follower never listened: \(agents[1].tail())")
            }
            sandbox.orders.create()
            let mark = agents[1].lineCount
            let killed = ContinuousClock.now
            agents[0].kill()
            guard let streaming = await agents[1].wait(for: "\"stream open\"", after: mark, timeout: .seconds(30)) else {
                throw BenchFailure("round \(round): the follower never took over: \(agents[1].tail())")
            }
            times.append(seconds(killed.duration(to: streaming)))
            agents.removeFirst()
            agents.append(try start())
        }
        times.sort()
        print("| rounds | fastest s | median s | slowest s | goal |")
        print("| ---: | ---: | ---: | ---: | --- |")
        print("| \(times.count) | \(format(times[0], 2)) | \(format(times[times.count / 2], 2)) | \(format(times[times.count - 1], 2)) | ≤ 5 s |")
    }
}

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
