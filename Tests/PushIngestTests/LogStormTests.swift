import CurlHTTP
import TestHarnesses
import Testing
import InMemoryLogging
import Logging
import PushIngest
import TestKit

/// Issue 13: a persistent fault or an attack must not flood the log. 1,000 refused pushes (wrong
/// token, and bodies over the limit) in about a second write a handful of lines, not 1,000 or 2,000.
@Suite(.timeLimit(.minutes(3))) struct LogStormTests {
    @Test func aThousandRefusedPushesWriteAHandfulOfLines() async throws {
        try await PushServerHarness.with(authentication: .bearer(secret: "s3cret-token"), maximumBodyBytes: 64) { harness in
            let small = #"{"notifications":[{"tokens":["t"],"platform":2}]}"#
            let large = String(repeating: "x", count: 200)
            var statuses: [Int: Int] = [:]
            let started = ContinuousClock.now
            for batch in 0..<20 {
                let answers = try await withThrowingTaskGroup(of: Int.self) { group in
                    for index in 0..<50 {
                        let body = (batch * 50 + index) % 2 == 0 ? small : large
                        group.addTask {
                            try await harness.push(body, headers: ["Authorization": "Bearer wrong-\(index)"]).status
                        }
                    }
                    return try await group.reduce(into: [Int]()) { $0.append($1) }
                }
                for status in answers { statuses[status, default: 0] += 1 }
            }
            #expect(statuses.values.reduce(0, +) == 1_000)
            #expect(statuses[200] == nil, "\(statuses)")
            // Two kinds of refusal (401, 413), each told once and then at most once per 10 s interval:
            // 4 lines for the second or so this takes, more only when the machine is slow (TSan).
            let intervals = Int((ContinuousClock.now - started) / .seconds(10)) + 1
            let lines = harness.logs.entries.filter { $0.message.description.contains("push") }
            #expect(lines.count <= 2 * (1 + intervals), "\(lines.count) lines: \(lines)")
            #expect(!harness.logs.entries("push authentication failed").isEmpty, "the first refusal is still told")
            #expect(!harness.logs.text.contains("s3cret-token") && !harness.logs.text.contains("wrong-"))
        }
    }
}
