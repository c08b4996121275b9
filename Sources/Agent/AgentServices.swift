import CurlHTTP
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
