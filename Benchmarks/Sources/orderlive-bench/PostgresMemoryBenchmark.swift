// The agent's memory under sustained PostgreSQL pushes (DESIGN §9, issue 61): the agent alone in a
// process of its own (`orderlive run --config` when BENCH_AGENT_BINARY names an orderlive executable,
// as `make release-static` builds it; else this executable's `memory-agent`), its store on the
// benchmark's throwaway cluster, nothing but pushes (the upstream unreachable, the orders API off);
// wrk at 50 connections with whole-order pushes for BENCH_PG_MEMORY_SECONDS (default 300: the
// budget's five minutes), RSS and its anonymous part sampled every tenth of the run and 30 s after.
// Budget: ≤ 60 MB, flat over the second half, back near idle after.

import Foundation

#if canImport(Glibc)
import Glibc
#endif

func postgresMemory(_ cluster: BenchCluster) async throws {
    let seconds = max(10, Int(ProcessInfo.processInfo.environment["BENCH_PG_MEMORY_SECONDS"] ?? "") ?? 300)
    let directory = NSTemporaryDirectory() + "orderlive-bench-pg-memory-\(UUID().uuidString)"
    try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: directory) }
    let script = directory + "/push.lua"
    try Data(wrkScript.utf8).write(to: URL(fileURLWithPath: script))
    let configuration = directory + "/orderlive.yaml"
    try Data("""
        upstream:
          base_url: "http://127.0.0.1:1"
        ingest:
          listen: "127.0.0.1:0"
          high_water_jobs: 10000000
        api:
          listen: ""
        store:
          state_dir: "\(directory)/state"
          backend: postgres
          postgres_url: "\(cluster.url)"
          account: "memory"
        log:
          level: "info"
          format: "json"

        """.utf8).write(to: URL(fileURLWithPath: configuration))
    let agent = try BenchAgent.memoryAgent(configuration: configuration, log: directory + "/agent.log")
    defer { agent.kill() }
    guard await agent.wait(for: "\"push endpoint listening\"", timeout: .seconds(60)) != nil, let port = agent.pushPort else {
        throw BenchFailure("the agent did not start: \(agent.tail())")
    }
    // It leads its account before the load starts, so pushes are applied as a leader applies them.
    try await cluster.waitForLeader(of: "memory")
    print("")
    print("agent memory under PostgreSQL pushes: the agent (\(BenchAgent.memoryAgentName)) in its own process, store on the throwaway cluster,"
          + " wrk -t2 -c50 -d\(seconds)s with whole-order pushes; RSS (anonymous / file-backed) MB from /proc/PID/status;"
          + " budget ≤ 60 MB, flat over the second half")
    let start = ContinuousClock.now
    let load = Task.detached { try runWrk(port: port, seconds: seconds, connections: 50, script: script) }
    var samples = [(at: 0, split: residentSplit(of: agent.pid))]
    for tenth in 1...10 {
        let at = seconds * tenth / 10
        try await Task.sleep(until: start.advanced(by: .seconds(at)), clock: .continuous)
        samples.append((at, residentSplit(of: agent.pid)))
    }
    guard let result = try await load.value else {
        print("wrk is not installed: `sudo apt-get install wrk`, then `BENCH_ONLY=postgres make bench`")
        return
    }
    try await Task.sleep(for: .seconds(30))
    samples.append((seconds + 30, residentSplit(of: agent.pid)))
    let peak = residentMegabytes("VmHWM", of: agent.pid)
    print("| s | " + samples.map { $0.at > seconds ? "\(seconds) + 30 (idle)" : "\($0.at)" }.joined(separator: " | ") + " |")
    print("| --- |" + String(repeating: " ---: |", count: samples.count))
    print("| RSS | " + samples.map { format($0.split.total) }.joined(separator: " | ") + " |")
    print("| anonymous / file-backed | " + samples.map { "\(format($0.split.anonymous)) / \(format($0.split.file))" }
        .joined(separator: " | ") + " |")
    let half = samples[5].split.total
    let end = samples[10].split.total
    print("\(result.requests) pushes (\(format(result.requestsPerSecond, 0))/s, \(result.errors) errors, p99 \(format(result.p99, 1)) ms);"
          + " peak \(format(peak)) MB (budget ≤ 60: \(peak <= 60 ? "met" : "MISSED")); second half \(format(end - half, 1)) MB;"
          + " 30 s after \(format(samples[11].split.total)) MB")
}
