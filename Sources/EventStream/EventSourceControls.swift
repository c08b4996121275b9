import AsyncSignals
import CurlHTTP
import Synchronization

/// Why the driver itself ended a connection.
enum ConnectionEndReason: Sendable {
    case restart
    case idleTimeout
    case stop
}

/// Restart, stop and the idle timer reach the running connection or backoff wait through here.
final class EventSourceControls: Sendable {
    private struct State {
        var transfer: StreamingTransfer?
        var endReason: ConnectionEndReason?
        var stopped = false
        var restartPending = false
        var waiter: CheckedContinuation<Void, Never>?
    }

    private let state = Locked(State())
    /// Mirrors `State.stopped` so the per-event check on the hot path is one atomic load, not a lock.
    private let stopped = Atomic<Bool>(false)

    var isStopped: Bool { stopped.load(ordering: .acquiring) }

    /// Ends everything: the running connection, any wait; no further request or event.
    func stop() {
        stopped.store(true, ordering: .releasing)
        let (transfer, waiter) = state.withLock { state in
            state.stopped = true
            if state.transfer != nil, state.endReason == nil { state.endReason = .stop }
            let waiter = state.waiter
            state.waiter = nil
            return (state.transfer, waiter)
        }
        transfer?.cancel()
        waiter?.resume()
    }

    /// Drops the running connection (or cuts a backoff wait short) and reconnects at once.
    func restart() {
        let (transfer, waiter) = state.withLock { state -> (StreamingTransfer?, CheckedContinuation<Void, Never>?) in
            if let transfer = state.transfer {
                if state.endReason == nil { state.endReason = .restart }
                return (transfer, nil)
            }
            state.restartPending = true
            let waiter = state.waiter
            state.waiter = nil
            return (nil, waiter)
        }
        transfer?.cancel()
        waiter?.resume()
    }

    /// The idle timer fired for the running connection.
    func idleTimedOut() {
        let transfer = state.withLock { state -> StreamingTransfer? in
            guard state.transfer != nil, state.endReason == nil else { return nil }
            state.endReason = .idleTimeout
            return state.transfer
        }
        transfer?.cancel()
    }

    /// Makes `transfer` the running connection; false (and nothing attached) once stopped.
    func attach(_ transfer: StreamingTransfer) -> Bool {
        state.withLock { state in
            guard !state.stopped else { return false }
            state.transfer = transfer
            state.endReason = nil
            state.restartPending = false
            return true
        }
    }

    /// The connection is over; returns why the driver ended it, if it did.
    func detach() -> ConnectionEndReason? {
        state.withLock { state in
            state.transfer = nil
            let reason = state.endReason
            state.endReason = nil
            return state.stopped ? .stop : reason
        }
    }

    /// The reason recorded for the running connection, if the driver is ending it.
    var pendingEndReason: ConnectionEndReason? {
        state.withLock { $0.stopped ? .stop : $0.endReason }
    }

    /// Waits until `deadline` on `clock`, or until stop or restart; true when woken early by a restart
    /// or stop (read ``isStopped`` to tell which).
    func wait<C: Clock>(until deadline: C.Instant, clock: C) async -> Bool where C.Duration == Duration {
        if consumeEarlyWake() { return true }
        return await withTaskGroup(of: Bool.self) { group in
            group.addTask {
                do { try await clock.sleepInSlices(until: deadline) } catch { return true }
                return false
            }
            group.addTask {
                await self.signalled()
                return true
            }
            let early = await group.next() ?? true
            group.cancelAll()
            // Whichever finished second is cancelled; a wake that raced the timer still counts.
            return consumeEarlyWake() || early
        }
    }

    private func consumeEarlyWake() -> Bool {
        state.withLock { state in
            if state.stopped { return true }
            if state.restartPending {
                state.restartPending = false
                return true
            }
            return false
        }
    }

    private func signalled() async {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let now = state.withLock { state in
                    if state.stopped || state.restartPending || Task.isCancelled { return true }
                    state.waiter = continuation
                    return false
                }
                if now { continuation.resume() }
            }
        } onCancel: {
            let waiter = state.withLock { state in
                let waiter = state.waiter
                state.waiter = nil
                return waiter
            }
            waiter?.resume()
        }
    }
}
