import AsyncSignals
import Dispatch
import Foundation

/// A task executor with one thread of its own, for the serial sync executor: its SQLite work is
/// synchronous, and on the shared cooperative pool (two threads on a two-core box) every apply
/// transaction held one of the threads the push handlers need.
final class ThreadTaskExecutor: TaskExecutor {
    private struct State {
        var jobs: [UnownedJob] = []
        var stopped = false
    }

    private let state = Locked(State())
    private let available = DispatchSemaphore(value: 0)

    /// Starts the thread, named `name`.
    init(name: String) {
        let thread = Thread { [self] in work() }
        thread.name = name
        thread.start()
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        state.withLock { $0.jobs.append(job) }
        available.signal()
    }

    /// Ends the thread once the jobs enqueued so far have run.
    func stop() {
        state.withLock { $0.stopped = true }
        available.signal()
    }

    private func work() {
        while true {
            available.wait()
            let (batch, stopped) = state.withLock { state in
                defer { state.jobs.removeAll(keepingCapacity: true) }
                return (state.jobs, state.stopped)
            }
            for job in batch { job.runSynchronously(on: asUnownedTaskExecutor()) }
            if stopped, state.withLock({ $0.jobs.isEmpty }) { return }
        }
    }
}
