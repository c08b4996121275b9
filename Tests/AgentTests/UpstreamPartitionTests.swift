import Foundation
import Sandbox
import TestHarnesses
import TestKit
import Testing

/// The upstream behind a link that drops every packet (issue 60): the agent runs on a host of its own
/// (a network namespace) and reaches the Sandbox only across a veth link that the test blackholes, as a
/// real partition does: no RST, no ICMP, SYNs unanswered, bytes in flight gone. Only the stream's idle
/// timeout can notice; reconnects time out until the link heals; then the stream resumes from its
/// `Last-Event-ID` and the store converges, without a storm of logins or reconnects. Its bounds are
/// times on real sockets: `make test` runs it alone, after the parallel suite.
@Suite(.timeLimit(.minutes(5)), .enabled(
    if: NetworkLab.available || ProcessInfo.processInfo.environment["CI"] != nil,
    "network namespaces cannot be made here (the tests need root and iproute2); CI runs this suite"))
struct UpstreamPartitionTests {
    /// The orders the agent's store holds, by id and status (`orderlive orders list --json`).
    static func statuses(in directory: String) async throws -> [String: String] {
        let (status, output) = try await StoreFileCommandsTests.run(["orders", "list", "--json"], in: directory)
        guard status == 0, let list = try JSONSerialization.jsonObject(with: Data(output.utf8)) as? [[String: Any]] else { return [:] }
        var statuses: [String: String] = [:]
        for order in list {
            if let id = order["id"].map({ "\($0)" }), let status = order["status"] as? String { statuses[id] = status }
        }
        return statuses
    }

    @Test func aTwentySecondBlackholeIsNoticedByTheIdleTimeoutAndTheStreamResumesWhenTheLinkHeals() async throws {
        let lab = try NetworkLab()
        defer { lab.remove() }
        let host = try lab.addHost()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("orderlive-blackhole-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let configuration = SandboxConfiguration(
            host: host.gateway, port: 0, heartbeatInterval: .seconds(1), auth: SandboxAuthConfiguration(requiresAuthentication: true),
            feed: .orderBook)
        try await Sandbox.withRunning(configuration) { sandbox in
            try await Self.partition(sandbox, lab: lab, host: host, directory: directory)
        }
    }

    /// The scenario itself, on a running Sandbox the agent on `host` reaches across its link only.
    static func partition(_ sandbox: Sandbox, lab: NetworkLab, host: NetworkLab.Host, directory: String) async throws {
        let book = sandbox.orders
        let first = book.create()
        let environment = [
            "ORDERLIVE_UPSTREAM_BASE_URL": await sandbox.baseURL, "ORDERLIVE_STORE_STATE_DIR": directory,
            "ORDERLIVE_AUTH_IDENTIFIER": SandboxUser.demo.identifier, "ORDERLIVE_AUTH_PASSWORD": SandboxUser.demo.password,
            "ORDERLIVE_INGEST_LISTEN": "", "ORDERLIVE_API_LISTEN": "", "ORDERLIVE_LOG_FORMAT": "json",
            "ORDERLIVE_STREAM_IDLE_TIMEOUT_MS": "3000", "ORDERLIVE_STREAM_MAX_DELAY_MS": "2000",
            "ORDERLIVE_UPSTREAM_CONNECT_TIMEOUT_MS": "2000", "ORDERLIVE_UPSTREAM_REQUEST_TIMEOUT_MS": "3000",
        ]
        let agent = try RunningAgent([], environment: environment, limit: .seconds(120),
                                     launcher: lab.command(in: host, []))
        _ = try #require(await agent.logs.wait(within: .seconds(30), message: "stream open"))
        book.update(first, status: "assigned")
        #expect(await eventually(within: .seconds(20)) { try await Self.statuses(in: directory)["\(first)"] == "assigned" })
        let logins = sandbox.authCounters.logins

        // The partition: every packet dropped, both ways. Orders change at the backend meanwhile.
        let clock = ContinuousClock()
        try lab.blackhole(host)
        let cut = clock.now
        let second = book.create()
        book.update(first, status: "picked_up")
        let lost = try #require(await agent.logs.wait(within: .seconds(15)) { $0["message"] == "stream lost" })
        let noticed = clock.now - cut
        #expect(noticed < .seconds(8), "the idle timeout (3 s) noticed the silent link: \(noticed) \(lost)")
        // Reconnects fail while the link is down for 20 s (their SYNs go unanswered; the connect
        // deadline, 2 s, ends each), spaced by the backoff, not a storm; `ss` on the agent's host
        // never shows more than one connection to the backend at a time.
        let pid = agent.child.process.processIdentifier
        let port = URL(string: await sandbox.baseURL)?.port ?? 0
        var most: [String] = []
        while clock.now - cut < .seconds(20) {
            let open = ((try? lab.sockets(of: pid, in: host)) ?? []).filter { $0.contains("\(host.gateway):\(port)") }
            if open.count > most.count { most = open }
            try await Task.sleep(for: .milliseconds(200))
        }
        let losses = agent.logs.lines.filter { $0["message"] == "stream lost" }.count
        #expect((3...11).contains(losses), "reconnects every 2 to 4 s through a 20 s blackhole, not a storm: \(losses) losses")
        #expect(most.count <= 1, "one connection to the backend at a time: \(most)")
        let beforeHeal = agent.logs.count
        try lab.heal(host)
        let reopened = await agent.logs.wait(from: beforeHeal, within: .seconds(30), message: "stream open")
        let healed = clock.now
        let cursor = reopened?.line["stream.cursor"] ?? ""
        #expect(reopened != nil && !cursor.isEmpty, "the stream reopened, from the last event id: \(cursor)")
        let converged = await eventually(within: .seconds(30)) {
            let statuses = try await Self.statuses(in: directory)
            return statuses["\(first)"] == "picked_up" && statuses["\(second)"] != nil
        }
        let statuses = try await Self.statuses(in: directory)
        #expect(converged, "the store converged after the heal: \(statuses)")
        #expect(clock.now - healed < .seconds(30))
        #expect(sandbox.authCounters.logins - logins <= 1, "no login storm: \(sandbox.authCounters.logins - logins) logins")
        agent.child.signal(SIGTERM)
        #expect(await agent.finish() == 0)
    }
}
