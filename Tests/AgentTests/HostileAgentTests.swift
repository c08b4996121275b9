import CurlHTTP
import Foundation
import Logging
import Testing
import TestHarnesses
import TestKit

/// Issue 11, against the real executable: the request that once stopped the agent, and 2,000 idle
/// connections held by another process, leave `orderlive run` serving and exiting cleanly.
/// (The connections are held out of process, and the agent is one: a test process with thousands
/// of descriptors open would break every other test that starts a child process.)
@Suite(.timeLimit(.minutes(5))) struct HostileAgentTests {
    /// Opens `count` connections to `port` and holds them; prints "ready N" once all are open,
    /// and exits when its standard input closes.
    private static let holder = """
        import socket, sys
        count, port = int(sys.argv[1]), int(sys.argv[2])
        held = [socket.create_connection(("127.0.0.1", port)) for _ in range(count)]
        print("ready", len(held), flush=True)
        sys.stdin.read()
        """

    @Test func theAgentOutlivesTheTimestampTrapAndTwoThousandIdleConnections() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("orderlive-hostile-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let secretFile = directory + "/ingest-secret"
        try Data("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw\n".utf8).write(to: URL(fileURLWithPath: secretFile))
        let environment = [
            "ORDERLIVE_UPSTREAM_BASE_URL": "http://127.0.0.1:1", "ORDERLIVE_STORE_STATE_DIR": directory + "/state",
            "ORDERLIVE_INGEST_LISTEN": "127.0.0.1:0", "ORDERLIVE_API_LISTEN": "127.0.0.1:0", "ORDERLIVE_INGEST_AUTH": "standard-webhooks",
            "ORDERLIVE_INGEST_SECRET_FILE": secretFile, "ORDERLIVE_INGEST_MAX_CONNECTIONS": "2100",
            "ORDERLIVE_LOG_FORMAT": "json",
        ]
        let agent = try RunningAgent([], environment: environment)
        let logs = agent.logs
        let listening = try #require(await logs.wait(message: "push endpoint listening"))
        let address = try #require(listening.line["push.listen"])
        let base = "http://" + address
        let loop = try CurlLoop(logger: quietLogger)

        // The issue's request: no secret, no valid signature, Int64.min as the timestamp.
        let trap = try await loop.perform(HTTPRequest(
            url: base + "/api/push", method: "POST",
            headers: ["Content-Type": "application/json", "webhook-id": "msg_1",
                      "webhook-timestamp": "-9223372036854775808", "webhook-signature": "v1,AAAA"],
            body: Array(#"{"notifications":[{"tokens":["t"],"platform":2}]}"#.utf8)))
        #expect(trap.status == 401)
        #expect(String(decoding: trap.body, as: UTF8.self).contains("webhook-timestamp is not a Unix time"))

        // 2,000 idle connections from another process; a further client is still served.
        let port = try #require(address.split(separator: ":").last.map(String.init))
        let holder = try ChildProcess(
            "/usr/bin/env", ["python3", "-c", Self.holder, "2000", port], input: .pipe, output: .pipe, error: .inherit)
        let ready = await Self.firstLine(of: try #require(holder.standardOutput))
        #expect(ready == "ready 2000", "the holder said \(ready)")
        let health = try await AgentHTTP(loop: loop).get(base + "/healthz")
        #expect(health.status == 200)
        let ready2 = try await AgentHTTP(loop: loop).get(base + "/readyz")
        #expect(ready2.status == 200, "\(ready2.body)")
        try holder.standardInput?.close()
        _ = await offThePool { holder.waitUntilExit() }

        await loop.shutdown()
        agent.child.signal(SIGTERM)
        #expect(await agent.finish() == 0)
        #expect(logs.lines.last?["message"] == "stopped")
        #expect(!logs.lines.contains { $0["level"] == "critical" })
    }

    /// The first line a pipe gives, read on a thread of its own.
    private static func firstLine(of handle: FileHandle) async -> String {
        await withCheckedContinuation { continuation in
            Thread.detachNewThread {
                var buffer = Data()
                while !buffer.contains(0x0A) {
                    let chunk = handle.availableData
                    if chunk.isEmpty { break }
                    buffer.append(chunk)
                }
                let line = buffer.split(separator: 0x0A).first.map { String(decoding: $0, as: UTF8.self) } ?? ""
                continuation.resume(returning: line)
            }
        }
    }
}
