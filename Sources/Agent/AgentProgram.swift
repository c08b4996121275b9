import AsyncSignals
public import AuthSession
import Foundation
import Logging
import SQLiteStore
import OrderSync
public import StoreModel
public import OrdersAPI
public import PushIngest
public import ServiceLifecycle
import UnixSignals

#if canImport(Glibc)
import Glibc
#endif

/// Why `orderlive run` could not start: what is wrong and what to do. Reported before any port is
/// bound or any service starts.
public struct AgentStartError: Error, Sendable, CustomStringConvertible {
    /// The one-line message.
    public var description: String

    init(_ description: String) {
        self.description = description
    }
}

/// The whole program of `orderlive run`, built by ``AgentBuilder/build(configuration:logger:)`` and
/// run by ``run(handlingSignals:)``.
public struct AgentProgram: Sendable {
    /// The services in dependency order: curl loop → session refresher → stream-status recorder → stream → executor →
    /// store probe → store observation → start-up memory release → push endpoint → orders API → shutdown marker. The group stops them in reverse: pushes are refused first, the curl loop stops last.
    public let services: [any Service]
    /// The push listener, when `ingest.listen` is set.
    public let pushServer: PushServer?
    /// The orders API listener, when `api.listen` is set.
    public let apiServer: OrdersAPIServer?
    /// What SIGHUP re-reads besides the TLS files.
    let credentials: CredentialsReload
    /// Live state for readiness and status.
    public let state: AgentState
    /// The metrics registry.
    public let metrics: AgentMetrics
    /// The order store, on either engine.
    public let store: any OrderStoreEngine
    /// The session.
    public let session: Session
    /// The state directory's lock (SQLite), held as long as the program is: released when the process ends.
    let stateLock: StateLock?
    let logger: Logger

    private let running = RunningGroup()

    /// Runs every service until graceful shutdown: ``shutdown()``, or with `handlingSignals`
    /// SIGTERM/SIGINT (SIGHUP reloads the listeners' TLS files, `api.tokens_file` and `ingest.secret_file` instead). A second signal exits the process at once (the journal is durable at every
    /// commit). A graceful shutdown that takes longer than 9 s is escalated to cancellation, and if
    /// that has not ended the process 0.8 s later, it exits with status 1, so the process is gone
    /// within 10 s whatever a dependency does.
    public func run(handlingSignals: Bool) async throws {
        var configuration = ServiceGroupConfiguration(
            // The stream ends on its own after a 204, and the agent runs on (pushes, the API, the executor).
            services: services.map { service in
                .init(service: service, successTerminationBehavior: service is StreamService<ContinuousClock> ? .ignore : .gracefullyShutdownGroup)
            },
            gracefulShutdownSignals: handlingSignals ? [.sigterm, .sigint] : [],
            logger: logger)
        configuration.maximumGracefulShutdownDuration = .seconds(9)
        // ServiceLifecycle's own cancellation deadline ends in a fatal error (a crash report, exit
        // 132); the deadline below exits cleanly instead.
        configuration.maximumCancellationDuration = nil
        let group = ServiceGroup(configuration: configuration)
        running.set(group)
        defer { running.set(nil) }
        // Stopped: a restore may now replace the store (the process may live on, as a test does).
        defer { stateLock?.release() }
        let logger = self.logger
        let store = self.store
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            if handlingSignals {
                let signals = await UnixSignalsSequence(trapping: .sigterm, .sigint, .sighup)
                let (pushServer, apiServer, credentials) = (self.pushServer, self.apiServer, self.credentials)
                tasks.addTask {
                    var seen = 0
                    for await signal in signals {
                        if signal == .sighup {
                            Self.reload(pushServer: pushServer, apiServer: apiServer, logger: logger)
                            credentials.reload(pushServer: pushServer, apiServer: apiServer, logger: logger)
                            continue
                        }
                        seen += 1
                        if seen == 1 {
                            logger.info("stopping: pushes now get 503; finishing the job in hand")
                            Self.exitAfterDeadline(logger: logger)
                        }
                        if seen >= 2 {
                            logger.warning("second signal: exiting at once; the journal keeps what is not applied")
                            exit(130)
                        }
                    }
                }
            }
            try await group.run()
            tasks.cancelAll()
        }
        let pending = (try? await store.counts().journalDepth).map { "\($0)" } ?? "unknown"
        logger.info("stopped", metadata: ["sync.journal_depth": "\(pending)"])
    }

    /// SIGHUP: both listeners load their TLS files again (the credentials files follow, in
    /// ``CredentialsReload``). New handshakes use the new material;
    /// connections already open keep theirs; a file that does not load leaves the material in use
    /// (logged naming the key and path, counted in `orderlive_tls_reload_failures_total`).
    static func reload(pushServer: PushServer?, apiServer: OrdersAPIServer?, logger: Logger) {
        logger.notice("SIGHUP: reloading the listeners' TLS certificates and keys, api.tokens_file and ingest.secret_file")
        pushServer?.reloadTLS()
        apiServer?.reloadTLS()
    }

    /// Starts graceful shutdown of a running ``run(handlingSignals:)``, as SIGTERM does.
    public func shutdown() async {
        guard let group = running.group else { return }
        logger.info("stopping: pushes now get 503; finishing the job in hand")
        await group.triggerGracefulShutdown()
    }

    /// The last resort behind the graceful budget: a plain thread, so a starved or stuck task pool
    /// cannot delay it.
    private static func exitAfterDeadline(logger: Logger) {
        Thread.detachNewThread {
            Thread.sleep(forTimeInterval: 9.8)
            logger.error("shutdown took longer than 9.8 s: exiting now; the journal keeps what is not applied")
            exit(1)
        }
    }
}

/// The service group of a running program, for ``AgentProgram/shutdown()``.
final class RunningGroup: Sendable {
    private let state = Locked<ServiceGroup?>(nil)

    var group: ServiceGroup? { state.withLock { $0 } }

    func set(_ group: ServiceGroup?) {
        state.withLock { $0 = group }
    }
}
