// Push ingest over HTTP/2 beside HTTP/1.1 (issue 57, DESIGN §14). One tool speaks both, h2load
// (Debian's nghttp2-client), so the two rows differ only in the protocol: the same one-notification
// Gorush body is posted to the agent's push endpoint (`ingest.http2_cleartext: true`, durability
// normal) over HTTP/1.1 (`--h1`, the reference), over h2c with one stream per connection (one
// request in flight per connection, as HTTP/1.1 has), and over h2c with ten streams on each of
// five connections (what HTTP/2 is for). h2load sends one body: it has no `notif_id`, so every
// request is journaled as its own job, all about one order, which the executor finds applied after
// the first. The rounds alternate the order of the rows so drift hits all of them.

import Foundation

#if canImport(Glibc)
import Glibc
#endif

private let pushBody = #"{"notifications":[{"tokens":["device-token-1"],"platform":2,"content_available":true,"#
    + #""data":{"type":"order.status_changed","order":{"id":4242,"status":"picked_up","version":1,"#
    + #""store_id":1,"courier_id":7}}}]}"#

private struct PushVariant {
    var name: String
    var http1: Bool
    var connections: Int
    var streams: Int
}

func pushHTTP2Benchmark(seconds: Int, rounds: Int) async throws {
    guard let h2load = ["/usr/bin/h2load", "/usr/local/bin/h2load"].first(where: { FileManager.default.isExecutableFile(atPath: $0) })
    else {
        print("h2load is not installed: `make deps` installs nghttp2-client, then `BENCH_ONLY=ingest BENCH_INGEST_CASES=h2 make bench`")
        return
    }
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("orderlive-push-h2-\(UUID().uuidString)").path
    try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: directory) }
    let bodyFile = directory + "/push.json"
    try Data(pushBody.utf8).write(to: URL(fileURLWithPath: bodyFile))
    let variants = [
        PushVariant(name: "HTTP/1.1 (`--h1`), 50 connections (reference)", http1: true, connections: 50, streams: 1),
        PushVariant(name: "h2c, 50 connections × 1 stream", http1: false, connections: 50, streams: 1),
        PushVariant(name: "h2c, 5 connections × 10 streams", http1: false, connections: 5, streams: 10),
    ]
    print("")
    print("push ingest over HTTP/2: h2load -t2 -D\(seconds), the same one-notification Gorush body each request, durability normal")
    print("| round | protocol | requests/s | p50 ms | p99 ms | CPU µs/request | errors | ratio to HTTP/1.1 | process RSS MB before → after (peak) |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |")
    for round in 1...rounds {
        var results: [(PushVariant, LoadResult)] = []
        for variant in round % 2 == 1 ? variants : variants.reversed() {
            let (result, _) = try await withAgent(durability: .normal, webhook: false, http2Cleartext: true) { port in
                try runH2load(h2load, port: port, seconds: seconds, variant: variant, body: bodyFile, directory: directory)
            }
            if let result { results.append((variant, result)) }
        }
        let reference = results.first(where: { $0.0.http1 })?.1.requestsPerSecond ?? 0
        for (variant, result) in results.sorted(by: { $0.0.http1 && !$1.0.http1 }) {
            print("| \(round) | \(variant.name) | \(format(result.requestsPerSecond, 0)) | \(format(result.p50, 2)) "
                + "| \(format(result.p99, 2)) | \(format(result.cpuMicrosecondsPerRequest, 1)) | \(result.errors) "
                + "| \(reference > 0 ? format(result.requestsPerSecond / reference, 2) + "×" : "—") | \(result.memory) |")
        }
    }
}

/// Runs h2load against the push endpoint on `port`: its summary gives the rate and the errors, its
/// per-request log (`--log-file`) the latency percentiles of the 2xx answers.
private func runH2load(
    _ h2load: String, port: Int, seconds: Int, variant: PushVariant, body: String, directory: String
) throws -> LoadResult {
    let log = directory + "/requests-\(UUID().uuidString).tsv"
    defer { try? FileManager.default.removeItem(atPath: log) }
    let process = Process()
    process.executableURL = URL(fileURLWithPath: h2load)
    process.arguments = ["-t2", "-c\(variant.connections)", "-m\(variant.streams)", "-D\(seconds)", "-d", body,
                         "-H", "content-type: application/json", "--log-file=\(log)"]
        + (variant.http1 ? ["--h1"] : []) + ["http://127.0.0.1:\(port)/api/push"]
    let output = Pipe()
    process.standardOutput = output
    process.standardError = FileHandle.nullDevice
    let cpuBefore = processCPUSeconds()
    try process.run()
    let data = output.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    let cpu = processCPUSeconds() - cpuBefore
    var result = LoadResult(requestsPerSecond: 0, requests: 0, p50: 0, p99: 0, errors: 0, cpuMicrosecondsPerRequest: 0)
    for line in String(decoding: data, as: UTF8.self).split(separator: "\n") {
        let fields = line.split(whereSeparator: { $0 == " " || $0 == "," }).map(String.init)
        if line.hasPrefix("finished in"), let index = fields.firstIndex(of: "req/s") {
            result.requestsPerSecond = Double(fields[index - 1]) ?? 0
        }
        if line.hasPrefix("requests:") {
            // "requests: 10 total, 10 started, 10 done, 10 succeeded, 0 failed, 0 errored, 0 timeout"
            for word in ["failed", "errored", "timeout"] {
                if let index = fields.firstIndex(of: word), index > 0 { result.errors += Int(fields[index - 1]) ?? 0 }
            }
        }
    }
    var durations: [Double] = []
    let text = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
    for row in text.split(separator: "\n") {
        let columns = row.split(separator: "\t")
        guard columns.count >= 3, let status = Int(columns[1]), let micros = Double(columns[2]) else { continue }
        if (200..<300).contains(status) { durations.append(micros / 1000) } else if status >= 300 { result.errors += 1 }
    }
    durations.sort()
    result.requests = durations.count
    if !durations.isEmpty {
        result.p50 = durations[min(durations.count - 1, durations.count / 2)]
        result.p99 = durations[min(durations.count - 1, durations.count * 99 / 100)]
    }
    result.cpuMicrosecondsPerRequest = result.requests > 0 ? cpu / Double(result.requests) * 1e6 : 0
    return result
}
