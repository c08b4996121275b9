import AsyncSignals
import Foundation

#if canImport(Glibc)
import Glibc
import TestKit
#endif

/// A throwaway PostgreSQL cluster from the distribution's packages (`make deps` installs them): one
/// per test process, in a temporary directory, on a free loopback port, trust authentication for
/// the superuser `postgres`, `fsync` off (nothing in it outlives the run). Each test takes a fresh
/// database of its own with ``database()``. A watcher process stops the cluster and removes its
/// directory when the test process ends, however it ends. As root, the cluster runs as the
/// `postgres` user, because `initdb` refuses root.
public final class PostgresServer: Sendable {
    /// Why the cluster could not be started.
    public struct Failure: Error, CustomStringConvertible {
        public let description: String

        /// A failure described by `description`.
        public init(description: String) {
            self.description = description
        }
    }

    /// The port on 127.0.0.1.
    public let port: Int
    /// The superuser.
    public let user = "postgres"
    /// The cluster's directories (data and socket).
    public let directory: String
    private let binaries: String
    private let databases = Locked(0)

    /// The cluster of this test process, started by the first test that asks.
    public static func running() async throws -> PostgresServer {
        try await started.value
    }

    private static let started = Task<PostgresServer, any Error> { try await PostgresServer.start() }

    /// Runs a server command (as `postgres` when root).
    private let prefix: [String]
    /// The server's `-o` options (port, socket directory, settings).
    private let options: String

    private init(port: Int, directory: String, binaries: String, prefix: [String], options: String) {
        self.port = port
        self.directory = directory
        self.binaries = binaries
        self.prefix = prefix
        self.options = options
    }

    /// A cluster of the calling test's own, for a test that stops and starts it (the shared one of
    /// ``running()`` must stay up for the tests beside it).
    /// It listens on `addresses` as well as 127.0.0.1, and trusts connections from `network` (a CIDR,
    /// a test's own namespaces: ``NetworkLab/network``) as it trusts loopback.
    public static func dedicated(listeningOn addresses: [String] = [], trusting network: String? = nil) async throws -> PostgresServer {
        try await start(listeningOn: addresses, trusting: network)
    }

    /// Stops the server (`pg_ctl stop -m fast`): its connections are closed, new ones refused.
    public func stop() async throws {
        let run = try await Self.run(prefix + [binaries + "/pg_ctl", "-D", directory + "/data", "-m", "fast", "-w", "stop"])
        guard run.status == 0 else { throw Failure(description: "pg_ctl stop failed: \(run.output)") }
    }

    /// Starts the stopped server again on the same port.
    public func start() async throws {
        let run = try await Self.run(prefix + [
            binaries + "/pg_ctl", "-D", directory + "/data", "-w", "-t", "60", "-l", directory + "/server.log", "-o", options,
            "start",
        ])
        guard run.status == 0 else { throw Failure(description: "pg_ctl start failed: \(run.output)") }
    }

    /// Creates an empty database and returns its name.
    public func database() async throws -> String {
        let number = databases.withLock { count in
            count += 1
            return count
        }
        let name = "t\(getpid())_\(number)"
        let run = try await Self.run([binaries + "/createdb", "-h", "127.0.0.1", "-p", "\(port)", "-U", user, name])
        guard run.status == 0 else { throw Failure(description: "createdb failed: \(run.output)") }
        return name
    }

    /// Runs one SQL statement with `psql` against `database`; its output, unaligned and without headers.
    public func psql(_ sql: String, database: String) async throws -> String {
        let run = try await Self.run([binaries + "/psql",
            "-h", "127.0.0.1", "-p", "\(port)", "-U", user, "-d", database, "-X", "-A", "-t", "-v", "ON_ERROR_STOP=1",
            "-c", sql,
        ])
        guard run.status == 0 else { throw Failure(description: "psql failed: \(run.output)") }
        return run.output.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Runs the SQL script at `path` with `psql` against `database`, stopping at the first error.
    public func psql(file path: String, database: String) async throws {
        let run = try await Self.run([binaries + "/psql",
            "-h", "127.0.0.1", "-p", "\(port)", "-U", user, "-d", database, "-X", "-q", "-v", "ON_ERROR_STOP=1",
            "-f", path,
        ])
        guard run.status == 0 else { throw Failure(description: "psql -f \(path) failed: \(run.output)") }
    }

    /// `postgres://postgres@HOST:PORT/DATABASE?sslmode=disable` (HOST: 127.0.0.1 unless given).
    public func url(database: String, host: String = "127.0.0.1") -> String {
        "postgres://\(user)@\(host):\(port)/\(database)?sslmode=disable"
    }

    /// The newest server binaries Debian installed (`/usr/lib/postgresql/N/bin`).
    public static func binaryDirectory() -> String? {
        let root = "/usr/lib/postgresql"
        let versions = (try? FileManager.default.contentsOfDirectory(atPath: root)) ?? []
        return versions.compactMap { Int($0) }.sorted().reversed()
            .map { "\(root)/\($0)/bin" }
            .first { FileManager.default.isExecutableFile(atPath: $0 + "/initdb") }
    }

    private static func start(listeningOn addresses: [String] = [], trusting network: String? = nil) async throws -> PostgresServer {
        guard let binaries = binaryDirectory() else {
            throw Failure(description: "PostgreSQL is not installed: `make deps` installs Debian's postgresql package")
        }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("orderlive-pg-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let asRoot = getuid() == 0
        // As root, every server command runs as `postgres`, who must own the directory.
        let prefix = asRoot ? ["/usr/sbin/runuser", "-u", "postgres", "--"] : []
        if asRoot {
            let chown = try await run(["/bin/chown", "-R", "postgres:postgres", directory])
            guard chown.status == 0 else { throw Failure(description: "chown failed: \(chown.output)") }
        }
        func server(_ tool: String, _ arguments: [String]) async throws -> ToolRun {
            try await run(prefix + [binaries + "/" + tool] + arguments)
        }
        let initdb = try await server("initdb", [
            "-D", directory + "/data", "--auth=trust", "--username=postgres", "--encoding=UTF8", "--no-sync",
        ])
        guard initdb.status == 0 else { throw Failure(description: "initdb failed: \(initdb.output)") }
        if let network {
            let rules = try FileHandle(forWritingTo: URL(fileURLWithPath: directory + "/data/pg_hba.conf"))
            try rules.seekToEnd()
            try rules.write(contentsOf: Data("host all all \(network) trust\n".utf8))
            try rules.close()
        }
        let listen = (["127.0.0.1"] + addresses).joined(separator: ",")
        // A free port: the kernel picks one for a socket bound to port 0, which is then closed.
        var lastOutput = ""
        for _ in 0..<5 {
            let port = try freeLoopbackPort()
            let options = "-p \(port) -k \(directory) -c listen_addresses=\(listen) -c fsync=off "
                + "-c synchronous_commit=off -c full_page_writes=off -c max_connections=300"
            let started = try await server("pg_ctl", [
                "-D", directory + "/data", "-w", "-t", "60", "-l", directory + "/server.log", "-o", options, "start",
            ])
            if started.status == 0 {
                try watch(directory: directory, stop: prefix + [binaries + "/pg_ctl", "-D", directory + "/data", "-m", "immediate", "stop"])
                return PostgresServer(port: port, directory: directory, binaries: binaries, prefix: prefix, options: options)
            }
            lastOutput = started.output + ((try? String(contentsOfFile: directory + "/server.log", encoding: .utf8)) ?? "")
        }
        throw Failure(description: "pg_ctl start failed: \(lastOutput)")
    }

    /// A shell that outlives nothing: it waits for this process to end, then stops the cluster and
    /// removes its directory. It runs in a process group of its own, so Ctrl-C or a `timeout` that
    /// signals the test's group ends the tests but not the watcher (the server, which `pg_ctl` puts
    /// in a session of its own, would otherwise be left running).
    private static func watch(directory: String, stop: [String]) throws {
        let quoted = stop.map { "'\($0)'" }.joined(separator: " ")
        _ = try spawn([
            "/bin/sh", "-c",
            "trap '' INT TERM HUP; while kill -0 \(getpid()) 2>/dev/null; do sleep 1; done; "
                + "\(quoted) >/dev/null 2>&1; rm -rf '\(directory)'",
        ], output: "/dev/null", ownProcessGroup: true)
    }

    /// Runs `arguments` to its end; its output (stdout and stderr) and exit status. Not Foundation's
    /// `Process`: `pg_ctl start` leaves the server running, and `Process.waitUntilExit` was seen
    /// spinning forever on a child that had exited. The child gets only its own output file (a file,
    /// not a pipe, so the long-lived server it starts holds nothing another test waits on) and is
    /// waited for on a plain thread.
    static func run(_ arguments: [String]) async throws -> ToolRun {
        let output = FileManager.default.temporaryDirectory.appendingPathComponent("orderlive-pg-run-\(UUID().uuidString)").path
        defer { unlink(output) }
        let child = try spawn(arguments, output: output)
        let status: Int32 = await withCheckedContinuation { continuation in
            Thread.detachNewThread {
                var status: Int32 = 0
                while waitpid(child, &status, 0) < 0 && errno == EINTR {}
                continuation.resume(returning: status)
            }
        }
        let text = (try? String(contentsOfFile: output, encoding: .utf8)) ?? ""
        // WIFEXITED / WEXITSTATUS, which Swift does not import as functions.
        let exited = status & 0x7F == 0
        return ToolRun(status: exited ? (status >> 8) & 0xFF : 128 + (status & 0x7F), output: text)
    }

    /// Starts `arguments` with stdin from /dev/null, stdout and stderr to `output`, and no other
    /// descriptor of this process; `ownProcessGroup` puts it in a new process group.
    private static func spawn(_ arguments: [String], output: String, ownProcessGroup: Bool = false) throws -> pid_t {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, output, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        typealias CloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32
        guard let closeFrom = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "posix_spawn_file_actions_addclosefrom_np") else {
            throw Failure(description: "this C library cannot close a spawned child's descriptors (glibc 2.34 or later needed)")
        }
        guard unsafeBitCast(closeFrom, to: CloseFrom.self)(&actions, 3) == 0 else {
            throw Failure(description: "posix_spawn_file_actions_addclosefrom_np failed")
        }
        var argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        if ownProcessGroup {
            posix_spawnattr_setpgroup(&attributes, 0)
            posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETPGROUP))
        }
        var child: pid_t = 0
        let spawned = posix_spawn(&child, arguments[0], &actions, &attributes, &argv, environ)
        guard spawned == 0 else { throw Failure(description: "could not start \(arguments[0]): error \(spawned)") }
        return child
    }
}

/// One heavy PostgreSQL scenario at a time (several agent processes, a cluster of its own, a
/// database stopped and started). Beside the rest of the suite on two cores, two or three of them
/// at once starved the test process long enough for unrelated tests' 1–10 s timeouts to pass.
public actor HeavyScenarios {
    /// The gate of this test process.
    public static let gate = HeavyScenarios()

    private var busy = false
    private var waiting: [CheckedContinuation<Void, Never>] = []

    /// Runs `body` when no other heavy scenario runs.
    public func exclusively<T: Sendable>(_ body: @Sendable () async throws -> T) async throws -> T {
        if busy {
            await withCheckedContinuation { waiting.append($0) }
        } else {
            busy = true
        }
        defer {
            if waiting.isEmpty { busy = false } else { waiting.removeFirst().resume() }
        }
        return try await body()
    }
}
