// Push ingest under load (issue 5, DESIGN §9): wrk, a second process on loopback, posts
// one-notification Gorush requests to (a) a bare Hummingbird server that reads the body and answers
// Gorush's 200 without any work — the reference — and (b) the push endpoint of the agent exactly as
// `orderlive run` builds it (AgentBuilder), which journals each request's job with group commit
// before answering while the executor applies the jobs beside it; (b) again with
// `store.durability: full`. The rounds alternate reference and agent so drift hits both.

import Agent
import Foundation
import Hummingbird
import Logging
import SQLiteStore
import StoreModel

#if canImport(Glibc)
import Glibc
#endif

struct LoadResult {
    var requestsPerSecond: Double
    var requests: Int
    var p50: Double  // milliseconds
    var p99: Double
    var errors: Int  // non-2xx answers and socket errors
    var cpuMicrosecondsPerRequest: Double
    var memory = ""  // RSS before → after (peak during), MB, for the agent runs
    var settled = ""  // what the load left owed (jobs, deliveries) when it ended, and what finishing it took
}

/// User + system CPU, seconds: of this process (the servers run here; wrk runs in its own process), or with
/// `RUSAGE_CHILDREN` of its children that ended and were waited for (pgbench).
func processCPUSeconds(_ who: __rusage_who = RUSAGE_SELF) -> Double {
    var usage = rusage()
    getrusage(__rusage_who_t(who.rawValue), &usage)
    return Double(usage.ru_utime.tv_sec) + Double(usage.ru_utime.tv_usec) / 1e6
        + Double(usage.ru_stime.tv_sec) + Double(usage.ru_stime.tv_usec) / 1e6
}

/// One notification carrying a whole order: the endpoint makes one upsert job of it. Each request
/// gets its own order id (per wrk thread and counter), so the executor really inserts rows.
let wrkScript = """
    local counter = 0
    local threads = 0
    function setup(thread)
      threads = threads + 1
      thread:set("tid", threads)
    end
    function request()
      counter = counter + 1
      local id = tid * 100000000 + counter
      local body = '{"notifications":[{"tokens":["device-token-1"],"platform":2,"content_available":true,' ..
        '"data":{"type":"order.status_changed","order":{"id":' .. id .. ',"status":"picked_up","version":1,' ..
        '"store_id":1,"courier_id":7}}}]}'
      return wrk.format("POST", "/api/push", {["Content-Type"] = "application/json"}, body)
    end
    """

func milliseconds(_ text: Substring) -> Double? {
    for (suffix, scale) in [("us", 0.001), ("ms", 1.0), ("s", 1000.0)] where text.hasSuffix(suffix) {
        return Double(text.dropLast(suffix.count)).map { $0 * scale }
    }
    return nil
}

/// Runs wrk against `port`; nil when wrk is not installed.
func runWrk(port: Int, seconds: Int, connections: Int, script: String, scheme: String = "http", path: String = "/api/push") throws -> LoadResult? {
    guard let wrk = ["/usr/bin/wrk", "/usr/local/bin/wrk"].first(where: { FileManager.default.isExecutableFile(atPath: $0) })
    else { return nil }
    let process = Process()
    process.executableURL = URL(fileURLWithPath: wrk)
    process.arguments = ["-t2", "-c\(connections)", "-d\(seconds)s", "--latency", "-s", script, "\(scheme)://127.0.0.1:\(port)\(path)"]
    let output = Pipe()
    process.standardOutput = output
    let cpuBefore = processCPUSeconds()
    try process.run()
    let data = output.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    let cpu = processCPUSeconds() - cpuBefore
    let text = String(decoding: data, as: UTF8.self)
    var result = LoadResult(requestsPerSecond: 0, requests: 0, p50: 0, p99: 0, errors: 0, cpuMicrosecondsPerRequest: 0)
    for line in text.split(separator: "\n") {
        let fields = line.split(separator: " ", omittingEmptySubsequences: true)
        if line.hasPrefix("Requests/sec:"), let value = fields.last.flatMap({ Double($0) }) { result.requestsPerSecond = value }
        if fields.count == 2, fields[0] == "50%" { result.p50 = milliseconds(fields[1]) ?? 0 }
        if fields.count == 2, fields[0] == "99%" { result.p99 = milliseconds(fields[1]) ?? 0 }
        if line.contains("requests in"), let count = fields.first.flatMap({ Int($0) }) { result.requests = count }
        if line.contains("Non-2xx or 3xx responses:"), let count = fields.last.flatMap({ Int($0) }) { result.errors += count }
        if line.contains("Socket errors:") {
            // "Socket errors: connect 0, read 0, write 0, timeout 0"
            result.errors += fields.compactMap { Int($0.trimmingCharacters(in: CharacterSet(charactersIn: ","))) }.reduce(0, +)
        }
    }
    result.cpuMicrosecondsPerRequest = result.requests > 0 ? cpu / Double(result.requests) * 1e6 : 0
    return result
}

/// The reference: the same Hummingbird, reading the body and answering Gorush's success, no work.
func withBareServer<T: Sendable>(_ body: @Sendable @escaping (Int) async throws -> T) async throws -> T {
    let router = Router()
    router.post("/api/push") { request, _ -> Response in
        _ = try await request.body.collect(upTo: 262_144)
        var headers = HTTPFields()
        headers[.contentType] = "application/json"
        return Response(status: .ok, headers: headers,
                        body: ResponseBody(byteBuffer: ByteBuffer(string: #"{"counts":1,"logs":[],"success":"ok"}"#)))
    }
    return try await withServing(router, body)
}

/// Serves `router` on a free port of 127.0.0.1 for the length of `body`, which gets the port.
func withServing<T: Sendable>(_ router: Router<BasicRequestContext>, _ body: @Sendable @escaping (Int) async throws -> T) async throws -> T {
    let (ports, continuation) = AsyncStream.makeStream(of: Int.self)
    let app = Application(
        router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)),
        onServerRunning: { channel in continuation.yield(channel.localAddress?.port ?? 0) }, logger: quiet)
    return try await withThrowingTaskGroup(of: T?.self) { group in
        group.addTask { try await app.run(); return nil }
        var iterator = ports.makeAsyncIterator()
        let port = await iterator.next() ?? 0
        let result = try await body(port)
        group.cancelAll()
        return result
    }
}

/// The agent as `orderlive run` builds it, in a fresh state directory; returns wrk's result and how
/// many orders and jobs the store holds afterwards (every acknowledged request must be one of them).
func withAgent(durability: StoreDurability, tls: (certificate: String, key: String)? = nil, webhook withEndpoint: Bool,
               http2Cleartext: Bool = false, telemetry: AgentTelemetry = AgentTelemetry(), _ body: @Sendable @escaping (Int) async throws -> LoadResult?) async throws -> (LoadResult?, stored: Int)
{
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("orderlive-ingest-bench-\(UUID().uuidString)").path
    defer { try? FileManager.default.removeItem(atPath: directory) }
    var configuration = OrderliveConfiguration()
    configuration.store.stateDirectory = directory
    configuration.store.durability = durability
    configuration.ingest.listen = "127.0.0.1:0"
    configuration.api.listen = ""
    configuration.ingest.highWaterJobs = 10_000_000
    configuration.ingest.http2.cleartext = http2Cleartext
    if let tls {
        configuration.ingest.tls.certificateFile = tls.certificate
        configuration.ingest.tls.keyFile = tls.key
    }
    // No backend: the stream backs off quietly; pushes carrying whole orders need none.
    configuration.upstream.baseURL = "http://127.0.0.1:1"
    // As `orderlive run` logs in production: JSON lines at info (nothing per accepted push), on stderr.
    var logger = Logger(label: "orderlive") { JSONLogHandler(label: $0) }
    logger.logLevel = ProcessInfo.processInfo.environment["BENCH_AGENT_LOG"] == nil ? .warning : .debug
    let program = try AgentBuilder.build(configuration: configuration, logger: logger, environment: [:], telemetry: telemetry)
    guard let server = program.pushServer else { return (nil, 0) }
    let webhook = try await addBenchWebhook(to: program, enabled: withEndpoint)
    defer { webhook?.kill() }
    let running = Task { try await program.run(handlingSignals: false) }
    let port = await server.port
    let before = residentMegabytes("VmRSS")
    resetPeakResident()
    var result = try await body(port)
    result?.memory = "\(format(before, 0)) → \(format(residentMegabytes("VmRSS"), 0)) (\(format(residentMegabytes("VmHWM"), 0)))"
    if let requests = result?.requests { result?.settled = try await settled(program.store, requests: requests, webhook: webhook != nil) }
    let counts = try await program.store.counts()
    await program.shutdown()
    try await running.value
    return (result, counts.orders + counts.journalDepth)
}

func ingestBenchmark() async throws {
    let seconds = Int(ProcessInfo.processInfo.environment["BENCH_INGEST_SECONDS"] ?? "") ?? 10
    let connections = 50
    // BENCH_INGEST_CASES=normal,full,tls,h2,otel (the default: all five) picks the agent's rows.
    let cases = Set((ProcessInfo.processInfo.environment["BENCH_INGEST_CASES"] ?? "normal,full,tls,h2,otel").split(separator: ",").map(String.init))
    let script = FileManager.default.temporaryDirectory.appendingPathComponent("orderlive-push-\(getpid()).lua").path
    try Data(wrkScript.utf8).write(to: URL(fileURLWithPath: script))
    defer { try? FileManager.default.removeItem(atPath: script) }
    let tls = try makeBenchCertificate()
    defer { try? FileManager.default.removeItem(atPath: tls.directory) }
    let wrkCases = !cases.isDisjoint(with: ["normal", "full", "tls"])
    if wrkCases {
        print("")
        print("push ingest: wrk -t2 -c\(connections) -d\(seconds)s, one-notification Gorush requests with a whole order")
        print("| round | server | requests/s | p50 ms | p99 ms | CPU µs/request | errors | stored/acknowledged | ratio to bare | process RSS MB before → after (peak) |")
        print("| --- | --- | ---: | ---: | ---: | ---: | ---: | --- | ---: | --- |")
    }
    let rounds = max(1, Int(ProcessInfo.processInfo.environment["BENCH_INGEST_ROUNDS"] ?? "") ?? 2)
    for round in 1...rounds where wrkCases {
        guard let bare = try await withBareServer({ port in try runWrk(port: port, seconds: seconds, connections: connections, script: script) }) else {
            print("wrk is not installed: `sudo apt-get install wrk`, then `BENCH_ONLY=ingest make bench`")
            return
        }
        func line(_ name: String, _ result: LoadResult, stored: String) {
            print("| \(round) | \(name) | \(format(result.requestsPerSecond, 0)) | \(format(result.p50, 2)) | \(format(result.p99, 2)) "
                + "| \(format(result.cpuMicrosecondsPerRequest, 1)) | \(result.errors) | \(stored) "
                + "| \(format(result.requestsPerSecond / bare.requestsPerSecond, 2))× | \(result.memory.isEmpty ? "—" : result.memory) |")
        }
        line("bare Hummingbird, 200 without work (reference)", bare, stored: "—")
        // The floor under Hummingbird: the same answer from a NIO handler on the event loop (issue 39, item 2).
        if let nio = try await withBareNIOServer({ port in
            try runWrk(port: port, seconds: seconds, connections: connections, script: script)
        }) {
            line("bare NIO handler, 200 without work (no request task)", nio, stored: "—")
        }
        let agentCases = [StoreDurability.normal, .full].filter { cases.contains($0.rawValue) }.flatMap { durability in
            benchWebhookVariants(round: round).map { (durability, $0) }
        }
        for (durability, withEndpoint) in agentCases {
            let (result, stored) = try await withAgent(durability: durability, webhook: withEndpoint) { port in
                try runWrk(port: port, seconds: seconds, connections: connections, script: script)
            }
            guard let result else { continue }
            line("orderlive push endpoint, durability \(durability.rawValue)\(withEndpoint ? ", one webhook endpoint" : "")", result,
                 stored: "\(stored) / \(result.requests - result.errors)\(stored >= result.requests - result.errors ? "" : " LOST")\(result.settled)")
        }
        // The same over TLS (ECDSA P-256, keep-alive connections as the backend keeps them), against the
        // same plain reference: what serving HTTPS costs (issue 37).
        guard cases.contains("tls") else { continue }
        let (result, stored) = try await withAgent(durability: .normal, tls: (tls.certificate, tls.key), webhook: benchWebhookEnabled) { port in
            try runWrk(port: port, seconds: seconds, connections: connections, script: script, scheme: "https")
        }
        if let result {
            line("orderlive push endpoint over TLS, durability normal", result,
                 stored: "\(stored) / \(result.requests - result.errors)\(stored >= result.requests - result.errors ? "" : " LOST")\(result.settled)")
        }
    }
    if cases.contains("h2") { try await pushHTTP2Benchmark(seconds: seconds, rounds: rounds) }
    if cases.contains("otel") { try await pushTelemetryBenchmark(seconds: seconds, rounds: rounds, script: script) }
}

/// A self-signed ECDSA certificate for 127.0.0.1, made with the `openssl` tool in a temporary directory.
func makeBenchCertificate() throws -> (directory: String, certificate: String, key: String) {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("orderlive-bench-tls-\(UUID().uuidString)").path
    try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    let (certificate, key) = (directory + "/cert.pem", directory + "/key.pem")
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    process.arguments = ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                         "-keyout", key, "-out", certificate, "-days", "1", "-subj", "/CN=127.0.0.1",
                         "-addext", "subjectAltName=IP:127.0.0.1"]
    process.standardOutput = FileHandle.nullDevice
    process.standardError = FileHandle.nullDevice
    try process.run()
    process.waitUntilExit()
    return (directory, certificate, key)
}
