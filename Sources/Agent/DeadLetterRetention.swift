package import AsyncSignals
package import Logging
package import CoreMetrics
public import ServiceLifecycle
package import StoreModel

/// Keeps at most `sync.dead_letter_limit` dead letters (DESIGN §13): dead letters stay until an
/// operator retries or drops them, but a backend that fails every job for days must not grow the
/// store without end. At start, whenever the executor makes a dead letter (`made`), and once a
/// minute (for the stream's unreadable events), the oldest beyond the limit are removed, with a log
/// line at `warning` naming how many and a counter, `orderlive_dead_letters_pruned_total`.
public struct DeadLetterRetention: Service {
    let store: any DeadLetterRepair
    let limit: Int
    let made: WakeSignal
    let pruned: Counter
    let logger: Logger

    /// Retention of `store`'s dead letters at `limit`, woken by `made`, counting into `pruned`.
    package init(store: any DeadLetterRepair, limit: Int, made: WakeSignal, pruned: Counter, logger: Logger) {
        self.store = store
        self.limit = limit
        self.made = made
        self.pruned = pruned
        self.logger = logger
    }

    /// Prunes until graceful shutdown or cancellation; a failed prune is tried again at the next turn.
    public func run() async {
        let clock = ContinuousClock()
        await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                await prune()
                await made.wait(until: clock.now.advanced(by: .seconds(60)), clock: clock)
            }
        }
    }

    /// One turn: removes what is beyond the limit.
    package func prune() async {
        do {
            let removed = try await store.pruneDeadLetters(keeping: limit)
            guard removed > 0 else { return }
            pruned.increment(by: Int64(removed))
            logger.warning("the oldest dead letters were removed: more were kept than sync.dead_letter_limit allows", metadata: [
                "dead_letters.removed": "\(removed)", "sync.dead_letter_limit": "\(limit)",
            ])
        } catch {
            logger.debug("dead letters could not be pruned; trying again later", metadata: ["store.reason": "\(error)"])
        }
    }
}
