import CurlHTTP
import Foundation
import Logging
import OrderStore
import OrderSync
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

/// The serial executor as a service. Graceful shutdown lets the job in hand finish, then returns;
/// the journal keeps the rest (DESIGN §10).
struct ExecutorService: Service {
    let executor: SyncExecutor
    let wake: WakeSignal
    let state: AgentState

    func run() async throws {
        let stopping = StopFlag()
        state.update { $0.executorRunning = true }
        defer { state.update { $0.executorRunning = false } }
        let thread = ThreadTaskExecutor(name: "orderlive-sync")
        defer { thread.stop() }
        await withGracefulShutdownHandler {
            await withTaskExecutorPreference(thread) {
                await executor.run(wake: wake, until: { stopping.isStopped })
            }
        } onGracefulShutdown: {
            stopping.stop()
            wake.signal()
        }
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
