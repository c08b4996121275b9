public import AsyncSignals
public import Logging
public import ServiceLifecycle
public import StoreModel

/// Clears the store's write fault by itself (DESIGN §10, §13): while the store is marked
/// unwritable it tries a small write on a timer — after 1 s, then backing off to every 10 s — and the
/// first that succeeds marks the store writable again, so `/readyz` returns to 200 within seconds of
/// the cause going away (disk space freed, the file writable again, the database back) with no push
/// and no stream event. Before, only a write that something else made could clear it, and an agent
/// whose traffic is gated by readiness got none. While the store is writable it only waits: nothing
/// is probed, so it costs nothing on the write path.
public struct StoreHealthProbe: Service {
    let store: any OrderReader & WriteProbe
    /// Signalled when the store's write health changes.
    let changed: WakeSignal
    /// The first delay after a fault, and the longest between probes.
    let first: Duration
    let longest: Duration
    let logger: Logger

    /// A probe of `store`, woken by `changed` (signalled on every change of its write health).
    public init(store: any OrderReader & WriteProbe, changed: WakeSignal, first: Duration = .seconds(1),
                longest: Duration = .seconds(10), logger: Logger) {
        self.store = store
        self.changed = changed
        self.first = first
        self.longest = longest
        self.logger = logger
    }

    /// Probes while the store is unwritable until graceful shutdown or cancellation, then returns
    /// (never throws: a probe cut short by shutdown is not a failure of the agent).
    public func run() async {
        await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                if store.writeHealth.writable {
                    await changed.wait(until: nil, clock: ContinuousClock())
                    continue
                }
                var delay = first
                while !store.writeHealth.writable {
                    do {
                        try await Task.sleep(for: delay)
                    } catch {
                        return
                    }
                    await store.probeWrite()
                    delay = min(delay * 2, longest)
                }
                logger.debug("a store probe found the store writable again")
            }
        }
    }
}
