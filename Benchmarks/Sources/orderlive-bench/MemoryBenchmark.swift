// The agent's own memory (DESIGN §9, issue 16): the agent with its defaults (SQLite, push endpoint
// and orders API on) in a process of its own against the Sandbox in another one, so the figures are
// the agent's RSS and nothing of the bench's or the server's. Idle after its first full sync; after
// 1,000 warm-up reconnects and each 1,000 more; under the push benchmark (wrk -c50, whole-order
// pushes) with its peak. The agent is `orderlive run --config` itself when BENCH_AGENT_BINARY names
// an orderlive executable (for example `make release-static`'s), else this executable's
// `memory-agent`, loading the same file with `orderlive run`'s own loader and builder.

import Agent
import Commands
import CurlHTTP
import Foundation
import Logging
import Sandbox

#if canImport(Glibc)
import Glibc
#endif

/// `orderlive-bench memory-agent CONFIG_FILE`: an agent as `orderlive run --config CONFIG_FILE` runs it
/// (the same loader, logging, telemetry and builder: `OTEL_EXPORTER_OTLP_ENDPOINT` in the environment
/// turns export on, as for `orderlive run`), JSON logs at info on stderr.
func runMemoryAgent(_ arguments: [String]) async throws {
    guard arguments.count == 1 else {
        throw BenchFailure("usage: orderlive-bench memory-agent CONFIG_FILE")
    }
    let configuration = try await ConfigurationLoader.load(file: arguments[0], environment: [:])
    try await ProcessCommands.runAgent(configuration)
}

/// The agent's settings, both ways it is run: the defaults but for both listeners on free loopback
/// ports and the reconnect delay at most 2 ms (so a thousand reconnects take seconds).
func memoryAgentConfiguration(backend: String, state: String, passwordFile: String) -> String {
    """
    upstream:
      base_url: "\(backend)"
    auth:
      identifier: "\(SandboxUser.demo.identifier)"
      password_file: "\(passwordFile)"
    ingest:
      listen: "127.0.0.1:0"
      high_water_jobs: 10000000
    api:
      listen: "127.0.0.1:0"
    stream:
      initial_delay_ms: 0
      max_delay_ms: 2
    store:
      state_dir: "\(state)"
    log:
      level: "info"
      format: "json"

    """
}

func memoryBenchmark() async throws {
    let idleSeconds = Int(ProcessInfo.processInfo.environment["BENCH_MEMORY_IDLE_SECONDS"] ?? "") ?? 5
    let pushSeconds = Int(ProcessInfo.processInfo.environment["BENCH_INGEST_SECONDS"] ?? "") ?? 10
    let directory = NSTemporaryDirectory() + "orderlive-bench-memory-\(UUID().uuidString)"
    try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: directory) }
    let passwordFile = directory + "/password"
    try Data((SandboxUser.demo.password + "\n").utf8).write(to: URL(fileURLWithPath: passwordFile))
    let script = directory + "/push.lua"
    try Data(wrkScript.utf8).write(to: URL(fileURLWithPath: script))

    let orders = 1_000
    let (server, base) = try await startBenchSandbox(orders: orders, log: directory + "/sandbox.log")
    defer { server.kill() }
    let configuration = directory + "/orderlive.yaml"
    try Data(memoryAgentConfiguration(backend: base, state: directory + "/state", passwordFile: passwordFile).utf8)
        .write(to: URL(fileURLWithPath: configuration))
    let agent = try BenchAgent.memoryAgent(configuration: configuration, log: directory + "/agent.log")
    defer { agent.kill() }
    guard await agent.wait(for: "\"full sync finished\"", timeout: .seconds(120)) != nil, let pushPort = agent.pushPort else {
        throw BenchFailure("the agent did not start and sync: \(agent.tail())")
    }

    print("")
    print("agent memory: the agent (\(BenchAgent.memoryAgentName),"
          + " default configuration: SQLite, push endpoint and orders API on) in its own process,"
          + " the Sandbox (\(orders) orders) in another; RSS from /proc/PID/status")
    print("| phase | agent RSS MB | goal |")
    print("| --- | ---: | --- |")

    // Idle: synced, stream open, nothing happening.
    try await Task.sleep(for: .seconds(idleSeconds))
    let idle = residentSplit(of: agent.pid)
    print("| idle, \(idleSeconds) s after its full sync of \(orders) orders | \(format(idle.total)) | ≤ 43 (DESIGN §9 since issue 39) |")
    print("| of which anonymous (heap, stacks, written data) / file-backed (code and read-only data mapped from"
          + " the executable and libraries) | \(format(idle.anonymous)) / \(format(idle.file)) | |")

    // Reconnects: each stream is cut by the Sandbox after 10 bytes (inside its opening comment);
    // the agent reconnects with its cursor and is cut again.
    let opened = "\"stream open\""
    try await CurlLoop.withLoop(logger: quiet) { loop in
        func reconnect(_ times: Int) async throws {
            let target = agent.count(containing: opened) + times
            var remaining = times
            while remaining > 0 {
                let batch = min(remaining, 1_000)
                let answer = try await loop.perform(HTTPRequest(
                    url: base + "/sandbox/faults/drop-stream?after_bytes=10&times=\(batch)", method: "POST"))
                guard answer.status == 200 else { throw BenchFailure("drop-stream answered \(answer.status)") }
                remaining -= batch
            }
            // Dropping the open stream starts the cycle; the scheduled cuts end the next `times` streams.
            _ = try await loop.perform(HTTPRequest(url: base + "/sandbox/faults/drop-open-streams", method: "POST"))
            guard await agent.wait(untilCount: target, of: opened, timeout: .seconds(300)) else {
                throw BenchFailure("the agent reconnected \(agent.count(containing: opened) - target + times) of \(times) times: \(agent.tail())")
            }
        }
        // A thousand to warm up (the allocator's arenas reach their working size), then three more
        // thousands (BENCH_MEMORY_RECONNECT_ROUNDS).
        try await reconnect(1_000)
        var figures = [residentSplit(of: agent.pid)]
        var elapsed: [Double] = []
        let rounds = Int(ProcessInfo.processInfo.environment["BENCH_MEMORY_RECONNECT_ROUNDS"] ?? "") ?? 3
        for _ in 0..<max(1, rounds) {
            let start = ContinuousClock.now
            try await reconnect(1_000)
            elapsed.append(seconds(start.duration(to: .now)))
            figures.append(residentSplit(of: agent.pid))
        }
        print("| after 1,000 warm-up reconnects, then after each 1,000 more (\(elapsed.map { format($0, 1) }.joined(separator: ", ")) s) |"
              + " \(figures.map(\.total).map { format($0) }.joined(separator: " → ")) | flat |")
        print("| the same, anonymous only | \(figures.map(\.anonymous).map { format($0) }.joined(separator: " → ")) | |")
    }

    // Under the push benchmark.
    let beforePush = residentMegabytes("VmRSS", of: agent.pid)
    resetPeakResident(of: agent.pid)
    guard let load = try runWrk(port: pushPort, seconds: pushSeconds, connections: 50, script: script) else {
        print("wrk is not installed: `sudo apt-get install wrk`, then `BENCH_ONLY=memory make bench`")
        return
    }
    let afterPush = residentSplit(of: agent.pid)
    let peak = residentMegabytes("VmHWM", of: agent.pid)
    print("| push benchmark: wrk -c50 \(pushSeconds) s, \(load.requests) requests (\(format(load.requestsPerSecond, 0))/s,"
          + " \(load.errors) errors); before → after (peak) | \(format(beforePush)) → \(format(afterPush.total)) (\(format(peak))) | ≤ 60 |")
    print("| after the push benchmark, anonymous / file-backed | \(format(afterPush.anonymous)) / \(format(afterPush.file)) | |")
}

/// A process's RSS and its two parts (`RssAnon`, `RssFile` + `RssShmem` of /proc/PID/status), MB.
func residentSplit(of pid: pid_t) -> (total: Double, anonymous: Double, file: Double) {
    let anonymous = residentMegabytes("RssAnon", of: pid)
    let file = residentMegabytes("RssFile", of: pid) + residentMegabytes("RssShmem", of: pid)
    return (residentMegabytes("VmRSS", of: pid), anonymous, file)
}
