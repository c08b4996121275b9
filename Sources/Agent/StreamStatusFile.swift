import CheckedInput
import Foundation
import Glibc
import JSONToolkit
import Logging
import ServiceLifecycle
import AsyncSignals
import OrderSync
import PostgresStore

#if canImport(Glibc)
import Glibc
#endif

/// `<state_dir>/stream-status.json`: the running agent's stream state, for `orderlive status` in
/// another process (DESIGN §5: status reads the state directory, and its stream part says what was
/// last known). Written at most once a second while it changes, and once more, as `stopped`, when
/// the agent stops. A file left by an agent that is no longer running reads as `stopped`.
public enum StreamStatusFile {
    /// The file's path in `stateDirectory`.
    public static func path(stateDirectory: String) -> String {
        StateDirectory(stateDirectory).streamStatusPath
    }

    /// The last known state, or nil when no agent has written one. `stream` is `stopped` unless the
    /// process that wrote it still runs.
    public static func read(stateDirectory: String) -> AgentState.Snapshot? {
        guard let data = FileManager.default.contents(atPath: path(stateDirectory: stateDirectory)),
              let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any]
        else { return nil }
        var snapshot = AgentState.Snapshot()
        // A file in the state directory: every number is checked (DESIGN §10).
        let pid = Checked.jsonInteger(object["pid"]).flatMap { Int32(exactly: $0) } ?? 0
        let alive = pid > 0 && (kill(pid, 0) == 0 || errno == EPERM)
        snapshot.stream = alive ? (object["state"] as? String).flatMap(AgentState.StreamState.init(rawValue:)) ?? .stopped : .stopped
        snapshot.reconnects = Checked.jsonInteger(object["reconnects"]).flatMap { Int(exactly: $0) } ?? 0
        snapshot.lastEventAt = Checked.jsonNumber(object["last_event_at"]).flatMap {
            Checked.finite($0, in: 0...Double(Checked.unixTimeRange.upperBound))
        }
        if alive, let backend = object["backend"] as? [String: Any] {
            snapshot.backendUnavailableSince = Checked.jsonNumber(backend["unavailable_since"]).flatMap {
                Checked.finite($0, in: 0...Double(Checked.unixTimeRange.upperBound))
            }
            snapshot.backendUnavailableReason = snapshot.backendUnavailableSince == nil ? nil : backend["reason"] as? String
        }
        if let cluster = object["cluster"] as? [String: Any] {
            snapshot.cluster.backend = (cluster["backend"] as? String) == "postgres" ? "postgres" : "sqlite"
            snapshot.cluster.account = cluster["account"] as? String
            // A stopped agent leads nothing; with SQLite the one agent is the leader by definition.
            let role = (cluster["role"] as? String) == "leader" ? "leader" : "follower"
            snapshot.cluster.role = snapshot.cluster.backend == "sqlite" ? "leader" : (alive ? role : "follower")
            snapshot.cluster.epoch = Checked.jsonInteger(cluster["epoch"])
            snapshot.cluster.leader = cluster["leader"] as? String
            snapshot.cluster.takeovers = Checked.jsonInteger(cluster["takeovers"]).flatMap { Int(exactly: $0) } ?? 0
            snapshot.cluster.database = cluster["database"] as? String
        }
        return snapshot
    }

    /// ``read(stateDirectory:)`` for `configuration`'s state directory. With PostgreSQL and no
    /// agent run here yet, the cluster is this account's, and the agent a follower until it runs.
    public static func read(for configuration: OrderliveConfiguration) -> AgentState.Snapshot? {
        var stream = read(stateDirectory: configuration.store.stateDirectory)
        if configuration.store.backend == .postgres, stream?.cluster.backend != "postgres" {
            var known = stream ?? AgentState.Snapshot()
            let account = try? AgentBuilder.postgresSettings(configuration, environment: ProcessInfo.processInfo.environment).account
            known.cluster = .init(backend: "postgres", account: account, role: "follower")
            stream = known
        }
        return stream
    }

    /// Writes `snapshot` atomically (a temporary file renamed over the old one).
    static func write(_ snapshot: AgentState.Snapshot, stateDirectory: String) throws {
        let json = "{" + [
            #""pid":\#(getpid())"#, #""state":\#(JSONText.string(snapshot.stream.rawValue))"#,
            #""reconnects":\#(snapshot.reconnects)"#,
            #""last_event_at":\#(snapshot.lastEventAt.map { String($0) } ?? "null")"#,
            #""cluster":\#(snapshot.cluster.json)"#,
            #""backend":{"unavailable_since":\#(snapshot.backendUnavailableSince.map { String($0) } ?? "null"),"reason":\#(snapshot.backendUnavailableReason.map(JSONText.string) ?? "null")}"#,
        ].joined(separator: ",") + "}\n"
        let target = path(stateDirectory: stateDirectory)
        let temporary = target + ".tmp"
        try Data(json.utf8).write(to: URL(fileURLWithPath: temporary))
        guard rename(temporary, target) == 0 else { throw CocoaError(.fileWriteUnknown) }
    }
}

/// Keeps `stream-status.json` current: after each change of the agent's state, at most four times a
/// second, and a last time as `stopped` after the stream service has stopped (it is placed before
/// the stream in the group, so it stops after it).
struct StreamStatusRecorder: Service {
    let state: AgentState
    let stateDirectory: String
    let logger: Logger

    func run() async throws {
        let (state, directory, logger) = (self.state, stateDirectory, self.logger)
        try? await cancelWhenGracefulShutdown {
            var written: AgentState.Snapshot?
            while !Task.isCancelled {
                let snapshot = state.snapshot
                if snapshot.stream != written?.stream || snapshot.reconnects != written?.reconnects
                    || snapshot.lastEventAt != written?.lastEventAt || snapshot.cluster != written?.cluster
                    || snapshot.backendUnavailableSince != written?.backendUnavailableSince {
                    do {
                        try StreamStatusFile.write(snapshot, stateDirectory: directory)
                        written = snapshot
                        logger.debug("stream status recorded", metadata: ["stream.state": "\(snapshot.stream.rawValue)"])
                    } catch {
                        // Only `status` in another process is less current; the agent carries on.
                        logger.warning("cannot write the stream status file", metadata: ["store.reason": "\(error)"])
                    }
                }
                try await Task.sleep(for: .milliseconds(250))
                await state.changes.wait(until: nil, clock: ContinuousClock())
            }
        }
        var last = state.snapshot
        last.stream = .stopped
        try? StreamStatusFile.write(last, stateDirectory: directory)
    }
}
