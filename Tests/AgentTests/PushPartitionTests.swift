import AsyncSignals
import CurlHTTP
import Foundation
import TestHarnesses
import TestKit
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Pushes across a bad link (issue 60): a Gorush-style sender on a host of its own (a network
/// namespace) pushes to the agent across a link that flaps, giving up on a request after 2 s and
/// sending it again, as Gorush's retries do. Requests are cut mid-body and answers lost after their
/// commit. Every push is acknowledged in the end and each notification journaled once (a resent
/// push's notifications are duplicates); nothing of a cut request is journaled; the half-open
/// connections the cuts leave take no admission slot from anyone, and are gone after the request
/// timeout. Its bounds are times on real sockets: `make test` runs it alone, after the parallel suite.
@Suite(.timeLimit(.minutes(4)), .enabled(
    if: NetworkLab.available || ProcessInfo.processInfo.environment["CI"] != nil,
    "network namespaces cannot be made here (the tests need root and iproute2); CI runs this suite"))
struct PushPartitionTests {
    /// The sender: pushes 1…COUNT in order, each carrying three whole orders (ids 1–3) at version N,
    /// each notification with its own `notif_id`; a push is sent again (same body) after a timeout,
    /// a failed connection or any answer but 200, until it is acknowledged; the next goes 250 ms
    /// later. Prints `ack N` per push and `attempts A` at the end.
    static let sender = #"""
        import json, sys, time, urllib.request
        url, token, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        attempts = 0
        for n in range(1, count + 1):
            notifications = [{"tokens": ["t"], "platform": 2, "notif_id": "s%d-%d" % (n, k),
                              "data": {"type": "order.updated", "order": {"id": k, "status": "v%d" % n, "version": n}}}
                             for k in (1, 2, 3)]
            body = json.dumps({"notifications": notifications}).encode()
            while True:
                attempts += 1
                request = urllib.request.Request(url, data=body, method="POST", headers={
                    "Content-Type": "application/json", "Authorization": "Bearer " + token})
                try:
                    with opener.open(request, timeout=2) as answer:
                        if answer.status == 200:
                            print("ack %d" % n, flush=True)
                            time.sleep(0.25)
                            break
                except Exception:
                    pass
                time.sleep(0.1)
        print("attempts %d" % attempts, flush=True)
        """#

    @Test func aSenderBehindAFlappingLinkGetsEveryPushStoredOnceAndTakesNoAdmissionSlot() async throws {
        let lab = try NetworkLab()
        defer { lab.remove() }
        let host = try lab.addHost()
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("orderlive-pushflap-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: root + "/state", withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: root) }
        try await Self.flapping(lab: lab, host: host, root: root, pushes: 100)
    }

    static func flapping(lab: NetworkLab, host: NetworkLab.Host, root: String, pushes: Int) async throws {
        let token = "pushflap-token-3Rq8-never-logged"
        try Data((token + "\n").utf8).write(to: URL(fileURLWithPath: root + "/push-token"))
        try Data(sender.utf8).write(to: URL(fileURLWithPath: root + "/sender.py"))
        let environment = [
            "ORDERLIVE_STORE_STATE_DIR": root + "/state", "ORDERLIVE_LOG_FORMAT": "json",
            "ORDERLIVE_UPSTREAM_BASE_URL": "http://127.0.0.1:9", "ORDERLIVE_STREAM_MAX_DELAY_MS": "1000",
            "ORDERLIVE_INGEST_LISTEN": "\(host.gateway):0", "ORDERLIVE_INGEST_AUTH": "bearer",
            "ORDERLIVE_INGEST_SECRET_FILE": root + "/push-token",
        ]
        let agent = try RunningAgent([], environment: environment, limit: .seconds(200))
        let listening = try #require(await agent.logs.wait(message: "push endpoint listening"))
        let base = "http://" + (listening.line["push.listen"] ?? "")
        let command = lab.command(in: host, [executable("python3") ?? "/usr/bin/python3", root + "/sender.py", base + "/api/push", token, "\(pushes)"])
        let finished = Locked(false)
        let sending = Task {
            defer { finished.withLock { $0 = true } }
            return try await runTool(command[0], Array(command.dropFirst()), deadline: .seconds(150))
        }

        // The link flaps until the sender is done: cut 0.5 to 3 s, healed 1 to 3 s.
        var random = SplitMix(state: 0x0050_5E4D)
        var cuts = 0
        while !finished.withLock({ $0 }) {
            try lab.blackhole(host)
            cuts += 1
            try await Task.sleep(for: .milliseconds(500 + Int(random.next() % 2_500)))
            try lab.heal(host)
            try await Task.sleep(for: .milliseconds(1_000 + Int(random.next() % 2_000)))
        }
        let run = try await sending.value
        let lines = run.output.split(separator: "\n")
        let acknowledged = lines.filter { $0.hasPrefix("ack ") }.count
        let attempts = lines.first { $0.hasPrefix("attempts ") }.flatMap { Int($0.dropFirst("attempts ".count)) } ?? 0
        #expect(run.status == 0 && acknowledged == pushes, "every push acknowledged in the end: \(run.output.suffix(400))")
        #expect(cuts >= 3 && attempts > pushes, "the link was cut \(cuts) times and pushes sent again: \(attempts) attempts")

        // Each notification journaled once, whatever the resends; the store holds the last push.
        let loop = try CurlLoop(logger: quietLogger)
        let clock = ContinuousClock()
        let asked = clock.now
        let ready = try await loop.perform(HTTPRequest(url: base + "/readyz", timeout: .seconds(5)))
        #expect(ready.status == 200 && clock.now - asked < .seconds(1), "/readyz at once after the cuts: \(clock.now - asked)")
        func metric(_ name: String) async throws -> Int? {
            let text = String(decoding: try await loop.perform(HTTPRequest(url: base + "/metrics")).body, as: UTF8.self)
            return text.split(separator: "\n").first { $0.hasPrefix(name + " ") || $0.hasPrefix(name + "{") }
                .flatMap { $0.split(separator: " ").last }.flatMap { Double($0) }.map { Int($0) }
        }
        #expect(try await metric("orderlive_push_jobs_total") == 3 * pushes, "each of the \(3 * pushes) notifications journaled once")
        #expect(try await metric("orderlive_push_connections_refused_total") ?? 0 == 0, "no connection refused for want of a slot")
        let stored = await eventually(within: .seconds(20)) {
            try await UpstreamPartitionTests.statuses(in: root + "/state") == ["1": "v\(pushes)", "2": "v\(pushes)", "3": "v\(pushes)"]
        }
        let statuses = try await UpstreamPartitionTests.statuses(in: root + "/state")
        #expect(stored, "the store holds the last push: \(statuses)")

        // The connections the cuts left half open are closed by the agent's request timeout.
        let pid = agent.child.process.processIdentifier
        let closed = await eventually(within: .seconds(40)) { try Self.sockets(of: pid, from: host.address).isEmpty }
        let left = try Self.sockets(of: pid, from: host.address)
        #expect(closed, "the agent still holds connections from the sender: \(left)")
        #expect(!agent.logs.raw.contains { $0.contains(token) })
        await loop.shutdown()
        agent.child.signal(SIGTERM)
        #expect(await agent.finish() == 0)
    }

    /// The established TCP sockets of process `pid` (in the test's namespace) whose peer is `address`.
    static func sockets(of pid: Int32, from address: String) throws -> [String] {
        let ss = FileManager.default.isExecutableFile(atPath: "/usr/bin/ss") ? "/usr/bin/ss" : "/bin/ss"
        let child = try ChildProcess(ss, ["-Htnp", "state", "established"], output: .pipe, error: .standardOutput)
        let output = String(decoding: child.standardOutput?.readDataToEndOfFile() ?? Data(), as: UTF8.self)
        _ = child.waitUntilExit()
        return output.split(separator: "\n").map(String.init).filter { $0.contains("pid=\(pid),") && $0.contains(" \(address):") }
    }
}
