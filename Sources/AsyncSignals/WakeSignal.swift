
/// Wakes the executor when jobs are journaled: `signal()` from anywhere, `wait(until:)` from the one
/// consumer. A signal given while nobody waits is remembered (once), so none is lost.
public final class WakeSignal: Sendable {
    private struct State {
        var pending = false
        var waiter: CheckedContinuation<Void, Never>?
    }

    private let state = Locked(State())

    /// Creates a signal.
    public init() {}

    /// Wakes the waiter, or the next wait.
    public func signal() {
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            if let waiter = state.waiter {
                state.waiter = nil
                return waiter
            }
            state.pending = true
            return nil
        }
        waiter?.resume()
    }

    /// Waits for a signal, or until `deadline` on `clock` (nil: no deadline), or cancellation.
    public func wait<C: Clock>(until deadline: C.Instant?, clock: C) async where C.Duration == Duration {
        if state.withLock({ state in
            defer { state.pending = false }
            return state.pending
        }) { return }
        await withTaskGroup(of: Void.self) { group in
            if let deadline {
                group.addTask { try? await clock.sleepInSlices(until: deadline) }
            }
            group.addTask { await self.signalled() }
            await group.next()
            group.cancelAll()
        }
    }

    private func signalled() async {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let now = state.withLock { state -> Bool in
                    if state.pending || Task.isCancelled {
                        state.pending = false
                        return true
                    }
                    state.waiter = continuation
                    return false
                }
                if now { continuation.resume() }
            }
        } onCancel: {
            let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
                let waiter = state.waiter
                state.waiter = nil
                return waiter
            }
            waiter?.resume()
        }
    }
}
