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

// The PostgreSQL benchmark's throwaway cluster, pgbench reference, and child processes.

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

    /// Waits up to `seconds` for an agent to lead `account` (its leadership row), so a load started
    /// after it meets a leader applying as leaders do.
    func waitForLeader(of account: String, seconds: Int = 10) async throws {
        for _ in 0..<(seconds * 40) where (try? psql(
            "SELECT COUNT(*) FROM orderlive_leadership WHERE account = '\(account)'")) != "1" {
            try await Task.sleep(for: .milliseconds(25))
        }
    }

    /// pgbench: `clients` clients for `seconds`, each transaction `script` (in the query mode `queryMode`
    /// pgbench's `-M` names); transactions per second and the p50 and p99 latencies from its
    /// per-transaction log.
    func pgbench(
        script: String, clients: Int, seconds: Int, queryMode: String = "prepared"
    ) throws -> (tps: Double, p50: Double, p99: Double) {
        let work = NSTemporaryDirectory() + "orderlive-pgbench-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: work, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: work) }
        try Data(script.utf8).write(to: URL(fileURLWithPath: work + "/insert.sql"))
        let run = try runToEnd([binaries + "/pgbench", "-h", "127.0.0.1", "-p", "\(port)", "-U", "postgres", "-n",
                                "-M", queryMode, "-c", "\(clients)", "-j", "\(min(2, clients))", "-T", "\(seconds)",
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
