import AsyncSignals
import CurlHTTP
import Logging
import PostgresStore
import ServiceLifecycle

/// The curl loop as a service: it lives until graceful shutdown, and shuts down after every service
/// started after it (the group stops in reverse order), so the job in hand can still fetch.
struct CurlLoopService: Service {
    let loop: CurlLoop

    func run() async throws {
        try? await gracefulShutdown()
        await loop.shutdown()
    }
}

/// Marks the agent as shutting down as soon as graceful shutdown begins (it is the last service
/// of the group, so the first one told), for `/readyz`.
struct ShutdownMarker: Service {
    let state: AgentState

    func run() async throws {
        try? await gracefulShutdown()
        state.update { $0.shuttingDown = true }
    }
}

/// The PostgreSQL store's connection pool as a service (DESIGN §12). It is the second service of
/// the group, so it stops after every service that uses it. Migrations run on the first use.
struct PostgresPoolService: Service {
    let store: PostgresOrderStore
    let logger: Logger

    func run() async throws {
        // The pool runs until graceful shutdown, which cancels it (as the other services do).
        await cancelWhenGracefulShutdown { await store.run() }
    }
}

/// Wakes the change feed and the executor when another agent of the account commits.
struct PostgresNotificationService: Service {
    let notifications: PostgresNotifications

    func run() async throws {
        let stopping = StopFlag()
        await withGracefulShutdownHandler {
            await notifications.run(until: stopping)
        } onGracefulShutdown: {
            stopping.stop()
        }
    }
}

/// Runs `work` (the stream and the serial executor) only while this agent leads its account: one
/// leader streams and applies for the whole cluster (DESIGN §12). Losing the leadership connection
/// cancels the work at once (the job in hand stays journaled, and the fence refuses anything it
/// would still commit); graceful shutdown lets the work finish as it does with SQLite, then gives
/// the leadership up so a follower takes over without waiting for `failover_s`.
struct LeaderOnlyService: Service {
    let leadership: PostgresLeadership
    let work: [any Service]
    let state: AgentState
    let logger: Logger

    func run() async throws {
        let stopping = StopFlag()
        let state = self.state
        await withGracefulShutdownHandler {
            await leadership.run(until: stopping, winding: { state.snapshot.shuttingDown }) {
                await withTaskGroup(of: Void.self) { group in
                    for service in work {
                        group.addTask {
                            try? await service.run()
                            logger.debug("leader work ended", metadata: ["cluster.work": "\(type(of: service))"])
                        }
                    }
                    await group.waitForAll()
                }
            }
        } onGracefulShutdown: {
            stopping.stop()
        }
    }
}
