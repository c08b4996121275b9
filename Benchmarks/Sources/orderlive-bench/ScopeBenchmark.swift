import Agent
import Foundation
import Logging
import SQLiteStore
import OrdersAPI

/// DESIGN §9's budget for scoped consumers (issue 55): REST throughput and the change feed's CPU per
/// delivery with 100 scoped tokens, against one unscoped token asking for the same stores, on the
/// same agent and the same bytes, rounds alternated in one run. The reference (A) is one unscoped
/// token whose requests filter with `?store_id=`; the scoped case (B) is a 100-line tokens file, each
/// consumer `stores=` one store, its requests without a filter. Both read the same orders.
func scopeBenchmark() async throws {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("orderlive-scope-bench-\(UUID().uuidString)").path
    try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: directory) }
    let stores = 12
    let unscoped = "unscoped-bench-token-0000"
    let scoped = (0..<100).map { "scoped-bench-token-\(1000 + $0)" }
    let unscopedFile = "\(unscoped) name=all\n"
    let scopedFile = scoped.enumerated().map { "\($1) name=screen-\($0) stores=store-\($0 % stores)" }.joined(separator: "\n") + "\n"
    let tokensPath = directory + "/tokens"
    try unscopedFile.write(toFile: tokensPath, atomically: true, encoding: .utf8)
    var configuration = OrderliveConfiguration()
    configuration.store.stateDirectory = directory + "/state"
    configuration.ingest.listen = ""
    configuration.api.listen = "127.0.0.1:0"
    configuration.api.auth = .bearer
    configuration.api.tokensFile = tokensPath
    configuration.upstream.baseURL = "http://127.0.0.1:1"
    var logger = Logger(label: "orderlive") { JSONLogHandler(label: $0) }
    logger.logLevel = .error
    let program = try AgentBuilder.build(configuration: configuration, logger: logger, environment: [:])
    guard let server = program.apiServer, let store = program.store as? SQLiteOrderStore else { return }
    try store.applyPage(try (0..<240).map { try benchOrder($0, version: 1, status: "created") })
    let running = Task { try await program.run(handlingSignals: false) }
    defer { running.cancel() }
    let port = await server.port
    func use(_ file: String) throws { server.replaceConsumers(try APIConsumers.parse(file)) }

    print("")
    print("scoped consumers: 100 scoped tokens (B) against one unscoped token filtering the same store (A), alternated, \(rounds) rounds")
    // REST: GET /v1/orders of one store (20 orders), wrk 2 threads, 16 connections.
    var rest: [String: [Double]] = ["A": [], "B": []]
    var restCPU: [String: [Double]] = ["A": [], "B": []]
    for _ in 0..<rounds {
        for (name, file, token, path) in [("A", unscopedFile, unscoped, "/v1/orders?store_id=store-7"), ("B", scopedFile, scoped[7], "/v1/orders")] {
            try use(file)
            let script = directory + "/get.lua"
            try "wrk.headers[\"Authorization\"] = \"Bearer \(token)\"\n".write(toFile: script, atomically: true, encoding: .utf8)
            guard let result = try runWrk(port: port, seconds: 2, connections: 16, script: script, path: path) else {
                print("wrk is not installed (make bench-deps): the REST half is skipped")
                break
            }
            rest[name, default: []].append(result.requestsPerSecond)
            restCPU[name, default: []].append(result.cpuMicrosecondsPerRequest)
        }
    }
    // The feed: 100 subscribers, each its own store's view; 2,000 changes committed back to back.
    var feedCPU: [String: [Double]] = ["A": [], "B": []]
    let committer = Committer(store: store, orders: 240)
    for _ in 0..<rounds {
        for name in ["A", "B"] {
            try use(name == "A" ? unscopedFile : scopedFile)
            let requests = directory + "/feed-\(name)"
            let lines = (0..<100).map { index in
                name == "A" ? "/v1/orders/stream?store_id=store-\(index % stores)\t\(unscoped)" : "/v1/orders/stream\t\(scoped[index])"
            }
            try lines.joined(separator: "\n").write(toFile: requests, atomically: true, encoding: .utf8)
            let client = try FeedClientProcess(port: port, subscribers: 100, stalled: 0, requests: requests)
            _ = client.line()
            client.send("reset")
            _ = client.line()
            let before = processCPUSeconds()
            _ = await committer.run(rate: 1_000, seconds: 2)
            var report = client.report()
            var previous = -1
            while (report["deliveries"] as? Int ?? 0) != previous {
                previous = report["deliveries"] as? Int ?? 0
                try await Task.sleep(for: .milliseconds(300))
                report = client.report()
            }
            let cpu = processCPUSeconds() - before
            let deliveries = report["deliveries"] as? Int ?? 0
            client.finish()
            if deliveries > 0 { feedCPU[name, default: []].append(cpu / Double(deliveries) * 1e6) }
            var remaining = server.hub.subscriberCount
            while remaining > 0 {
                let now = await server.hub.subscriberCountChange(from: remaining, within: .seconds(30))
                if now == remaining { break }
                remaining = now
            }
        }
    }
    func median(_ values: [Double]) -> Double { values.isEmpty ? 0 : values.sorted()[values.count / 2] }
    // Each round's B against the A measured just before it: drift of the machine's load cancels out
    // of the pair, and the median of the pairs is the figure.
    func pairs(_ values: [String: [Double]]) -> [Double] {
        zip(values["A"] ?? [], values["B"] ?? []).compactMap { a, b in a > 0 ? (b / a - 1) * 100 : nil }
    }
    print("| measure | A: one unscoped token + ?store_id (median) | B: 100 scoped tokens (median) | B against A, per round | median of the rounds |")
    print("| --- | ---: | ---: | --- | ---: |")
    for (label, values, higherIsBetter) in [("REST GET /v1/orders, requests/s", rest, true), ("REST agent CPU µs per request", restCPU, false),
                                            ("feed agent CPU µs per delivery (2,000 changes, 100 subscribers)", feedCPU, false)] {
        let (a, b) = (median(values["A"] ?? []), median(values["B"] ?? []))
        let rounds = pairs(values)
        print("| \(label)\(higherIsBetter ? "" : " (lower is better)") | \(format(a, 1)) | \(format(b, 1)) "
            + "| \(rounds.map { format($0, 1) + " %" }.joined(separator: ", ")) | \(format(median(rounds), 1)) % |")
    }
    await program.shutdown()
}
