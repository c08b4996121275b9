// The store on PostgreSQL (issue 15, DESIGN §9 and §12), on a throwaway cluster this benchmark starts
// from Debian's packages (`make deps`) with PostgreSQL's default durability (fsync and synchronous
// commit on), each figure next to `pgbench` running the same INSERT into the journal on the same
// server in the same run:
//
// - push ingest at 50 connections (wrk), each request journaled or applied before its 200, against
//   the same agent's `/healthz`, pgbench's 50 clients inserting one job per transaction, and
//   pgbench's 50 clients running the leader's own transaction for one push (PostgresPushReference.swift);
// - stream → committed and applied (full-order events from the Sandbox), against one pgbench client
//   (the stream is one connection, committing serially);
// - failover: two agents, each in its own process (this benchmark re-executed as `agent`); the
//   leader is killed with SIGKILL and the time until the follower logs `stream open` is measured;
// - the agent's memory under five minutes of pushes (PostgresMemoryBenchmark.swift).

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
    // BENCH_POSTGRES_PARTS=ingest (or stream, failover, memory, comma-separated) runs only those parts.
    let parts = Set((ProcessInfo.processInfo.environment["BENCH_POSTGRES_PARTS"] ?? "ingest,stream,failover,memory")
        .split(separator: ",").map { String($0) })
    if parts.contains("ingest") { try await postgresIngest(cluster) }
    if parts.contains("stream") { try await postgresStream(cluster) }
    if parts.contains("failover") { try await postgresFailover(cluster) }
    if parts.contains("memory") { try await postgresMemory(cluster) }
}

/// Push ingest: wrk at 50 connections against the agent (as `orderlive run` builds it) on PostgreSQL,
/// next to pgbench's 50 clients, alternating, twice.
func postgresIngest(_ cluster: BenchCluster) async throws {
    let seconds = Int(ProcessInfo.processInfo.environment["BENCH_INGEST_SECONDS"] ?? "") ?? 10
    let connections = 50
    let script = NSTemporaryDirectory() + "orderlive-push-pg-\(getpid()).lua"
    try Data(wrkScript.utf8).write(to: URL(fileURLWithPath: script))
    defer { try? FileManager.default.removeItem(atPath: script) }
    let health = NSTemporaryDirectory() + "orderlive-health-pg-\(getpid()).lua"
    try Data("-- GET /healthz\n".utf8).write(to: URL(fileURLWithPath: health))
    defer { try? FileManager.default.removeItem(atPath: health) }
    let statements = ProcessInfo.processInfo.environment["BENCH_PG_STATEMENTS"] != nil
    print("")
    print("push ingest on PostgreSQL: wrk -t2 -c\(connections) -d\(seconds)s, one-notification Gorush requests with a whole order,"
          + " against the same agent's GET /healthz for as long just before (the budget's reference, DESIGN §9);"
          + " pgbench -c\(connections) -j2 -T\(seconds) with the journal's INSERT, one per transaction, and with the leader's"
          + " own transaction for one push applied in place (the budget's second reference: push ≥ 1× of it)")
    print("| round | what | per second | p50 ms | p99 ms | errors | stored/acknowledged | ratio to /healthz (p99) "
          + "| ratio to pgbench: INSERT / per-push transaction | CPU µs per request: agent or pgbench / PostgreSQL | WAL bytes per request |"
          + (statements ? " statements per request |" : ""))
    print("| --- | --- | ---: | ---: | ---: | ---: | --- | ---: | ---: | --- | ---: |" + (statements ? " ---: |" : ""))
    _ = try cluster.psql(
        "INSERT INTO orderlive_leadership (account, epoch, leader, since) VALUES ('\(pgbenchPushAccount)', 1, 'pgbench', 0)")
    let pushScript = try pgbenchPushScript()
    for round in 1...2 {
        let reference = try pgbenchReference(
            cluster, round: round, what: "pgbench, INSERT INTO orderlive_job (reference)", script: pgbenchInsert,
            clients: connections, seconds: seconds, statements: statements)
        let pushReference = try pgbenchReference(
            cluster, round: round, what: "pgbench, the leader's transaction for one push applied in place (reference)",
            script: pushScript, queryMode: "simple", clients: connections, seconds: seconds, statements: statements)
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
        try await cluster.waitForLeader(of: configuration.store.account, seconds: 5)
        guard let healthz = try runWrk(port: port, seconds: seconds, connections: connections, script: health, path: "/healthz")
        else {
            print("wrk is not installed: `sudo apt-get install wrk`, then `BENCH_ONLY=postgres make bench`")
            await program.shutdown()
            try await running.value
            return
        }
        print("| \(round) | the same agent's GET /healthz (the budget's reference) | \(format(healthz.requestsPerSecond, 0)) | "
              + "\(format(healthz.p50, 2)) | \(format(healthz.p99, 2)) | \(healthz.errors) | — | 1.00× (1.00×) | — | "
              + "\(format(healthz.cpuMicrosecondsPerRequest, 0)) / — | — |" + (statements ? " — |" : ""))
        if statements { _ = try cluster.psql("CREATE EXTENSION IF NOT EXISTS pg_stat_statements; SELECT pg_stat_statements_reset()") }
        let walBefore = try cluster.psql("SELECT pg_current_wal_insert_lsn()")
        let serverBefore = postgresServerCPUSeconds()
        guard let result = try runWrk(port: port, seconds: seconds, connections: connections, script: script) else {
            print("wrk is not installed: `sudo apt-get install wrk`, then `BENCH_ONLY=postgres make bench`")
            await program.shutdown()
            try await running.value
            return
        }
        let serverCPU = (postgresServerCPUSeconds() - serverBefore) / Double(max(1, result.requests)) * 1e6
        let requests = max(1, result.requests)
        let walBytes = Double(try cluster.psql("SELECT pg_wal_lsn_diff(pg_current_wal_insert_lsn(), '\(walBefore)')")) ?? 0
        let counts = try await program.store.counts()
        let statementsPerRequest = statements ? try printStatements(cluster, requests: requests) : ""
        await program.shutdown()
        try await running.value
        let acknowledged = result.requests - result.errors
        let stored = counts.orders + counts.journalDepth
        print("| \(round) | orderlive push endpoint, journaled before the 200 | \(format(result.requestsPerSecond, 0)) | "
              + "\(format(result.p50, 2)) | \(format(result.p99, 2)) | \(result.errors) | "
              + "\(stored) / \(acknowledged)\(stored >= acknowledged ? "" : " LOST") | "
              + "\(format(result.requestsPerSecond / max(1, healthz.requestsPerSecond), 2))× "
              + "(\(format(result.p99 / max(0.001, healthz.p99), 1))×) | "
              + "\(format(result.requestsPerSecond / reference.tps, 2))× / \(format(result.requestsPerSecond / pushReference.tps, 2))× | "
              + "\(format(result.cpuMicrosecondsPerRequest, 0)) / \(format(serverCPU, 0)) | \(format(walBytes / Double(requests), 0)) |"
              + (statements ? " \(statementsPerRequest) |" : ""))
    }
}

/// One pgbench reference of a push round, printed as its row: `clients` clients for `seconds`, then
/// `VACUUM ANALYZE` (pgbench's rows would be vacuumed during the agent's run: vacuumed now, the
/// agent's run measures the agent). Its transactions per second and latencies.
func pgbenchReference(
    _ cluster: BenchCluster, round: Int, what: String, script: String, queryMode: String = "prepared", clients: Int,
    seconds: Int, statements: Bool
) throws -> (tps: Double, p50: Double, p99: Double) {
    let (serverBefore, clientBefore) = (postgresServerCPUSeconds(), processCPUSeconds(RUSAGE_CHILDREN))
    let reference = try cluster.pgbench(script: script, clients: clients, seconds: seconds, queryMode: queryMode)
    _ = try cluster.psql("VACUUM ANALYZE")
    let transactions = max(1, reference.tps * Double(seconds))
    let cpu = (client: (processCPUSeconds(RUSAGE_CHILDREN) - clientBefore) / transactions * 1e6,
               server: (postgresServerCPUSeconds() - serverBefore) / transactions * 1e6)
    print("| \(round) | \(what) | \(format(reference.tps, 0)) | "
          + "\(format(reference.p50, 2)) | \(format(reference.p99, 2)) | 0 | — | — | 1.00× | "
          + "\(format(cpu.client, 0)) / \(format(cpu.server, 0)) | — |" + (statements ? " — |" : ""))
    return reference
}

/// Every statement the server ran during a push run (the agent's executor, its leadership and
/// notification connections included), per request, printed with the top 25 by execution time;
/// returns the statements per request.
func printStatements(_ cluster: BenchCluster, requests: Int) throws -> String {
    let perRequest = format((Double(try cluster.psql("SELECT COALESCE(SUM(calls), 0) FROM pg_stat_statements")) ?? 0)
        / Double(requests), 2)
    print(try cluster.psql("""
        SELECT round(calls::numeric / \(requests), 3) AS per_request, calls, round(total_exec_time::numeric, 1),
               round(total_plan_time::numeric, 1), round(mean_exec_time::numeric, 3),
               left(regexp_replace(query, '\\s+', ' ', 'g'), 110)
        FROM pg_stat_statements ORDER BY total_exec_time DESC LIMIT 25
        """))
    return perRequest
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
