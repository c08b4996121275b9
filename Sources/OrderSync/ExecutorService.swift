public import AsyncSignals
public import ServiceLifecycle

/// The serial executor as a service, on a thread of its own (``ThreadTaskExecutor``). Graceful
/// shutdown lets the job in hand finish, then returns; the journal keeps the rest (DESIGN §10).
public struct ExecutorService: Service {
    let executor: SyncExecutor
    let wake: WakeSignal
    let lookEvery: Duration?
    let running: @Sendable (Bool) -> Void

    /// Creates the service. `running` is told `true` when the executor's loop starts and `false`
    /// when it ends (for readiness); `lookEvery` as ``SyncExecutor/run(wake:lookEvery:until:)`` says.
    public init(
        executor: SyncExecutor, wake: WakeSignal, lookEvery: Duration? = nil,
        running: @escaping @Sendable (Bool) -> Void = { _ in }
    ) {
        self.executor = executor
        self.wake = wake
        self.lookEvery = lookEvery
        self.running = running
    }

    /// Applies journaled jobs until graceful shutdown.
    public func run() async throws {
        let stopping = StopFlag()
        running(true)
        defer { running(false) }
        let thread = ThreadTaskExecutor(name: "orderlive-sync")
        defer { thread.stop() }
        await withGracefulShutdownHandler {
            await withTaskExecutorPreference(thread) {
                await executor.run(wake: wake, lookEvery: lookEvery, until: { stopping.isStopped })
            }
        } onGracefulShutdown: {
            stopping.stop()
            wake.signal()
        }
    }
}
