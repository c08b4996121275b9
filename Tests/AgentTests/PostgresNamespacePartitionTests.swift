import AsyncSignals
import CurlHTTP
import Foundation
import Sandbox
import Testing
import TestHarnesses
import TestKit

#if canImport(Glibc)
import Glibc
#endif

/// PostgreSQL partitions for real (issue 60): three agents for one account, each on a host of its own
/// (a network namespace) with two links to the test's namespace: one its clients and the Sandbox use,
/// one to PostgreSQL alone. The test blackholes a database link: every packet dropped both ways, SYNs
/// too, no RST, no ICMP, so only the agent's deadlines and the kernel's keepalive and
/// `TCP_USER_TIMEOUT` notice, while the test still reaches the agent to push and ask `/readyz`. Its
/// bounds are times on real sockets: `make test` runs it alone, after the parallel suite.
@Suite(.serialized, .timeLimit(.minutes(6)), .enabled(
    if: NetworkLab.available || ProcessInfo.processInfo.environment["CI"] != nil,
    "network namespaces cannot be made here (the tests need root and iproute2); CI runs this suite"))
struct PostgresNamespacePartitionTests {
    typealias Agent = PostgresFailoverTests.Agent
    static let leads = "this agent leads its account now: it streams and applies"
    /// The bearer token pushes carry: an agent listening beyond loopback must authenticate them.
    static let bearer = "ns-push-token-5Wc9-never-logged"

    /// The lab, its three hosts with their database links, a PostgreSQL cluster of the test's own that
    /// listens on those links, and a Sandbox on the first host's client link.
    struct Cluster {
        let lab: NetworkLab
        let hosts: [NetworkLab.Host]
        let databaseLinks: [NetworkLab.Link]
        let server: PostgresServer
        let database: String
        let configs: PostgresAgentConfiguration
        let sandbox: Sandbox
        let upstream: String
        let account: String

        /// Starts agent `index` (`a`, `b`, `c`) on its host: pushes on the host's client address, the
        /// database across its own link.
        func start(_ index: Int) async throws -> Agent {
            let name = ["a", "b", "c"][index]
            return try await PostgresFailoverTests.start(
                name, configs: configs,
                environment: [
                    "ORDERLIVE_UPSTREAM_BASE_URL": upstream, "ORDERLIVE_INGEST_LISTEN": "\(hosts[index].address):0",
                    "ORDERLIVE_INGEST_AUTH": "bearer", "ORDERLIVE_INGEST_SECRET_FILE": configs.directory + "/push-token",
                ],
                lifetime: .seconds(300), url: server.url(database: database, host: databaseLinks[index].gateway),
                launcher: lab.command(in: hosts[index], []))
        }

        /// `agent`'s TCP sockets to PostgreSQL, each its local port and state (ss's names), read with `ss`.
        func databaseSockets(of agent: Agent, on index: Int) throws -> [(port: String, state: String)] {
            let peer = "\(databaseLinks[index].gateway):\(server.port)"
            let lines = try lab.sockets(of: agent.child.process.processIdentifier, in: hosts[index])
            return lines.compactMap { line in
                let fields = line.split(separator: " ", omittingEmptySubsequences: true).map(String.init)
                guard fields.count >= 5, fields[4] == peer, let port = fields[3].split(separator: ":").last else { return nil }
                return (String(port), fields[0])
            }
        }
    }

    /// Builds the cluster for `account`, runs `body`, and takes it all down on every path.
    static func withCluster(_ label: String, account: String, failover: Int, _ body: @Sendable (Cluster) async throws -> Void) async throws {
        try await HeavyScenarios.gate.exclusively {
            let lab = try NetworkLab()
            defer { lab.remove() }
            let hosts = try (0..<3).map { _ in try lab.addHost() }
            let links = try hosts.map { try lab.addLink(to: $0) }
            let server = try await PostgresServer.dedicated(listeningOn: links.map(\.gateway), trusting: lab.network)
            let database = try await server.database()
            let configs = try PostgresAgentConfiguration(label, url: server.url(database: database), account: account, failover: failover)
            defer { configs.remove() }
            try Data((bearer + "\n").utf8).write(to: URL(fileURLWithPath: configs.directory + "/push-token"))
            let configuration = SandboxConfiguration(
                host: hosts[0].gateway, port: 0, auth: SandboxAuthConfiguration(requiresAuthentication: true), feed: .orderBook)
            do {
                try await Sandbox.withRunning(configuration) { sandbox in
                    let cluster = Cluster(lab: lab, hosts: hosts, databaseLinks: links, server: server, database: database,
                                          configs: configs, sandbox: sandbox, upstream: await sandbox.baseURL, account: account)
                    try await body(cluster)
                }
            } catch {
                try? await server.stop()
                throw error
            }
            try? await server.stop()
        }
    }

    /// The leader's database link blackholed: it steps down, a follower streams within `failover_s`
    /// + 5 s, every push to the cut-off agent is answered (200 only when committed, else 503) within
    /// `failover_s` + 2 s and its `/readyz` within 1 s, and the sockets it had to PostgreSQL are gone
    /// (`ss`) within `failover_s` + 1 s. Healed, it rejoins as a follower; one agent leads, with a
    /// higher epoch; every acknowledged push is kept and no job was applied twice.
    @Test func aLeaderWhoseDatabaseLinkIsBlackholedStepsDownAndAFollowerStreams() async throws {
        try await Self.withCluster("nsblackhole", account: "depot-60", failover: 3) { cluster in
            try await Self.blackholedLeader(cluster, failover: 3)
        }
    }

    static func blackholedLeader(_ cluster: Cluster, failover: Int) async throws {
        let book = cluster.sandbox.orders
        let ids = (0..<4).map { _ in book.create() }
        let loop = try CurlLoop(logger: quietLogger)
        let http = AgentHTTP(loop: loop)
        let first = try await cluster.start(0)
        _ = try #require(await first.logs.wait(message: leads))
        let others = [try await cluster.start(1), try await cluster.start(2)]
        let pushes = PartitionPushes(loop: loop, book: book, orders: ids, bearer: bearer)
        for agent in [first] + others + [first] { _ = try await pushes.send(to: agent) }
        #expect(await pushes.accepted.count == 4, "pushes before the cut are accepted")
        let held = Set(try cluster.databaseSockets(of: first, on: 0).filter { $0.state == "ESTAB" }.map(\.port))
        #expect(!held.isEmpty, "the leader holds connections to PostgreSQL before the cut")

        // The cut: the leader's packets to and from PostgreSQL go nowhere, silently.
        let clock = ContinuousClock()
        try cluster.lab.blackhole(cluster.databaseLinks[0])
        let cutAt = clock.now
        let cutWall = Date()
        // The sockets it held, watched with `ss` until none is left: when, and what each last showed.
        let sockets = Task { () -> (gone: Duration?, seen: [String]) in
            var seen: [String] = []
            while clock.now - cutAt < .seconds(failover + 10) {
                let open = (try? cluster.databaseSockets(of: first, on: 0).filter { held.contains($0.port) }) ?? []
                let now = "\(open.map { "\($0.port) \($0.state)" })"
                if seen.last.map({ !$0.hasSuffix(now) }) ?? true { seen.append("\(clock.now - cutAt): " + now) }
                if open.isEmpty { return (clock.now - cutAt, seen) }
                try? await Task.sleep(for: .milliseconds(100))
            }
            return (nil, seen)
        }
        try await PostgresFailoverTests.expectTheCutOffAgentAnswersInTime(
            first, pushes: pushes, failover: failover, since: cutAt, http: http)
        let (gone, seen) = await sockets.value
        #expect(gone.map { $0 < .seconds(failover + 1) } == true,
                "the cut-off leader's PostgreSQL sockets were gone after \(gone.map { "\($0)" } ?? "never"): \(seen); cut at \(cutWall); its log: \(first.logs.raw.suffix(40).joined(separator: "\n"))")

        // A follower took over, streams and applies.
        let agents = ["b": others[0], "c": others[1]]
        let next = try #require(await PostgresFailoverTests.leader(epoch: 2, among: agents, leads: leads))
        let leader = try #require(agents[next])
        let took = try #require(await leader.logs.wait(message: leads, ["cluster.epoch": "2"]))
        let streaming = try #require(await leader.logs.wait(from: took.index, message: "stream open"))
        let time = ISO8601DateFormatter()
        time.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        let streamedAfter = (time.date(from: streaming.line["time"] ?? "") ?? .distantFuture).timeIntervalSince(cutWall)
        #expect(streamedAfter < Double(failover + 5), "the follower streams \(streamedAfter) s after the cut")
        book.update(ids[1], status: "delivered")
        _ = try #require(await leader.logs.wait(
            from: took.index, message: "event journaled", ["stream.event.id": "\(book.latestSequence)"]))
        for agent in others { _ = try await pushes.send(to: agent) }

        // Healed: the old leader rejoins as a follower and takes pushes again.
        try cluster.lab.heal(cluster.databaseLinks[0])
        try await PostgresFailoverTests.expectTheOldLeaderRejoinsAsAFollower(first, pushes: pushes, http: http)

        // One leader, every acknowledged push kept and applied, no job applied twice.
        let upstream = book.snapshot.mapValues(\.status)
        let (stored, depth) = try await PostgresFailoverTests.converge(
            server: cluster.server, database: cluster.database, account: cluster.account, to: upstream, leaderLogs: leader.logs)
        #expect(stored == upstream && depth == "0")
        try await PostgresFailoverTests.expectTheAccountsRecordHolds(
            server: cluster.server, database: cluster.database, account: cluster.account, accepted: await pushes.accepted, epoch: 2)
        await PostgresFailoverTests.stopCleanly([first] + others)
        await loop.shutdown()
    }
}
