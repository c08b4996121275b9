// Cold start (DESIGN §9): the Sandbox holding 100,000 orders in a process of its own, an empty store,
// an agent as `orderlive run` builds it in another process, timed until the full sync has committed;
// next to the same pages fetched and only counted through a curl loop in this process.

import Agent
import AsyncSignals
import CurlHTTP
import Foundation
import Logging
import Sandbox
import Synchronization

/// `orderlive-bench sandbox ORDERS`: a Sandbox (order-book feed, bearer tokens required) holding
/// ORDERS orders, serving until killed. A new agent, with no cursor, is told `orders.resync`: the
/// orders are created silently and two later changes leave a log whose oldest event is past cursor 0.
func runBenchSandbox(_ arguments: [String]) async throws {
    guard arguments.count == 1, let count = Int(arguments[0]), count > 0 else {
        throw BenchFailure("usage: orderlive-bench sandbox ORDERS")
    }
    let configuration = SandboxConfiguration(
        port: 0, auth: SandboxAuthConfiguration(requiresAuthentication: true), feed: .orderBook, orderRetention: 1)
    let sandbox = Sandbox(configuration: configuration, logger: quiet)
    for _ in 0..<count { sandbox.orders.create(announce: .silent) }
    sandbox.orders.update(1, status: "assigned")
    sandbox.orders.update(1, status: "picked_up")
    try await sandbox.run { port in
        say("sandbox listening on port \(port)")
    }
}

/// Starts `orderlive-bench sandbox ORDERS` and waits for it to listen; the process and its base URL.
func startBenchSandbox(orders: Int, log: String) async throws -> (process: BenchAgent, base: String) {
    let server = try BenchAgent(executable: benchExecutable, arguments: ["sandbox", "\(orders)"], log: log)
    guard await server.wait(for: "sandbox listening on port", timeout: .seconds(120)) != nil,
          let port = server.line(containing: "sandbox listening on port")?.split(separator: " ").last.flatMap({ Int($0) })
    else {
        server.kill()
        throw BenchFailure("the Sandbox did not start: \(server.tail())")
    }
    return (server, "http://127.0.0.1:\(port)")
}

/// `orderlive-bench coldstart-agent BACKEND_URL STATE_DIR PASSWORD_FILE`: an agent as `orderlive run`
/// builds it, on SQLite, the Sandbox's demo user, JSON logs on stderr.
func runColdStartAgent(_ arguments: [String]) async throws {
    guard arguments.count == 3 else {
        throw BenchFailure("usage: orderlive-bench coldstart-agent BACKEND_URL STATE_DIR PASSWORD_FILE")
    }
    var configuration = OrderliveConfiguration()
    configuration.upstream.baseURL = arguments[0]
    configuration.store.stateDirectory = arguments[1]
    configuration.auth.identifier = SandboxUser.demo.identifier
    configuration.auth.passwordFile = arguments[2]
    try await runAgentAsOrderliveRun(configuration)
}

/// User plus system CPU seconds a child has used so far (`/proc/PID/stat`, fields 14 and 15).
func childCPUSeconds(_ pid: pid_t) -> Double {
    guard let text = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
          let close = text.lastIndex(of: ")") else { return 0 }
    // After the command's closing parenthesis: field 3 (state) onwards, so utime is index 11.
    let fields = text[text.index(after: close)...].split(separator: " ")
    guard fields.count > 12, let user = Double(fields[11]), let system = Double(fields[12]) else { return 0 }
    return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
}

/// Downloads every page of `GET /v1/orders` through `loop` and counts the bodies' bytes: nothing is
/// parsed but the `next_cursor` at each body's end. Returns (pages, bytes).
func downloadOnly(loop: CurlLoop, base: String, token: String, pageSize: Int) async throws -> (pages: Int, bytes: Int) {
    let marker = Array(#""next_cursor":"#.utf8)
    var cursor: String?
    var pages = 0
    var bytes = 0
    repeat {
        var url = base + "/v1/orders?limit=\(pageSize)"
        if let cursor { url += "&cursor=" + cursor }
        let response = try await loop.perform(HTTPRequest(url: url, headers: ["Authorization": "Bearer " + token]))
        guard response.status == 200 else { throw BenchFailure("GET orders answered \(response.status)") }
        pages += 1
        bytes += response.body.count
        // The cursor is the body's last field: `"next_cursor":"N"}` or `"next_cursor":null}`.
        let tail = response.body.suffix(64)
        guard let found = tail.firstRange(of: marker) else { throw BenchFailure("no next_cursor in a page") }
        let value = tail[found.upperBound...].dropLast()
        cursor = value.first == 0x22 ? String(decoding: value.dropFirst().dropLast(), as: UTF8.self) : nil
    } while cursor != nil
    return (pages, bytes)
}

func coldStartBenchmark() async throws {
    let orderCount = Int(ProcessInfo.processInfo.environment["BENCH_COLDSTART_ORDERS"] ?? "") ?? 100_000
    let pageSize = 500
    let coldRounds = min(rounds, 3)
    let directory = NSTemporaryDirectory() + "orderlive-bench-coldstart-\(UUID().uuidString)"
    try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: directory) }
    let passwordFile = directory + "/password"
    try Data((SandboxUser.demo.password + "\n").utf8).write(to: URL(fileURLWithPath: passwordFile))

    let (server, base) = try await startBenchSandbox(orders: orderCount, log: directory + "/sandbox.log")
    defer { server.kill() }

    print("")
    print("cold start: \(orderCount) orders, \(pageSize) per page, the Sandbox in its own process;"
          + " the agent (own process, SQLite, `orderlive run`'s builder) from start to `full sync finished`,"
          + " the reference fetching and counting the same pages through a curl loop here; \(coldRounds) alternating rounds")
    var references: [Double] = []
    var agents: [(total: Double, sync: Double, agentCPU: Double, serverCPU: Double)] = []
    var referenceCPU: [Double] = []
    var pageCount = 0
    var byteCount = 0
    try await CurlLoop.withLoop(logger: quiet) { loop in
        let login = try await loop.perform(HTTPRequest(
            url: base + "/v1/auth/login", method: "POST", headers: ["Content-Type": "application/json"],
            body: Array(#"{"identifier":"\#(SandboxUser.demo.identifier)","password":"\#(SandboxUser.demo.password)"}"#.utf8)))
        guard let object = try JSONSerialization.jsonObject(with: Data(login.body)) as? [String: Any],
              let token = object["access_token"] as? String else { throw BenchFailure("login failed: \(login.status)") }
        // One warm-up download, so both sides meet a Sandbox whose pages have been built once.
        _ = try await downloadOnly(loop: loop, base: base, token: token, pageSize: pageSize)
        for round in 1...coldRounds {
            let selfBefore = processCPUSeconds()
            let start = ContinuousClock.now
            let (pages, bytes) = try await downloadOnly(loop: loop, base: base, token: token, pageSize: pageSize)
            references.append(seconds(start.duration(to: .now)))
            referenceCPU.append(processCPUSeconds() - selfBefore)
            pageCount = pages
            byteCount = bytes

            let state = directory + "/agent-\(round)"
            let serverAtStart = childCPUSeconds(server.pid)
            let started = ContinuousClock.now
            let agent = try BenchAgent(executable: benchExecutable, arguments: ["coldstart-agent", base, state, passwordFile],
                                       log: directory + "/agent-\(round).log")
            guard let finished = await agent.wait(for: "\"full sync finished\"", timeout: .seconds(600)) else {
                agent.kill()
                throw BenchFailure("round \(round): the agent never finished its full sync: \(agent.tail())")
            }
            let agentCPU = childCPUSeconds(agent.pid)
            let serverCPU = childCPUSeconds(server.pid) - serverAtStart
            let opened = await agent.wait(for: "\"stream open\"", timeout: .seconds(1)) ?? started
            let line = agent.line(containing: "\"full sync finished\"") ?? ""
            agent.kill()
            guard line.contains(#""sync.orders":"\#(orderCount)""#) else {
                throw BenchFailure("round \(round): the full sync did not see every order: \(line)")
            }
            agents.append((seconds(started.duration(to: finished)), seconds(opened.duration(to: finished)), agentCPU, serverCPU))
            try? FileManager.default.removeItem(atPath: state)
        }
    }
    let reference = references.sorted()[references.count / 2]
    let byTotal = agents.sorted { $0.total < $1.total }
    let median = byTotal[byTotal.count / 2]
    let bySync = agents.map(\.sync).sorted()[agents.count / 2]
    print("| what | median s | orders/s | ratio to download-only | CPU s (agent / Sandbox) |")
    print("| --- | ---: | ---: | ---: | --- |")
    print("| download-only: \(pageCount) pages, \(byteCount / 1_000_000) MB, fetched and counted | \(format(reference, 2)) |"
          + " \(format(Double(orderCount) / reference, 0)) | 1.00 | \(format(referenceCPU.sorted()[referenceCPU.count / 2], 2)) (this process) |")
    print("| agent: start → full sync committed | \(format(median.total, 2)) | \(format(Double(orderCount) / median.total, 0)) |"
          + " \(format(reference / median.total, 2)) | \(format(median.agentCPU, 2)) / \(format(median.serverCPU, 2)) |")
    print("| agent: `stream open` → full sync committed | \(format(bySync, 2)) | \(format(Double(orderCount) / bySync, 0)) |"
          + " \(format(reference / bySync, 2)) | |")
    print("goal: ≥ 0.50× of download-only (start → committed)")
}
