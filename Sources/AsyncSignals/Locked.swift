#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A value reachable only while holding a lock: `withLock` is the one way in, as with
/// `Synchronization.Mutex`, whose signature it keeps so call sites read the same.
///
/// Why not `Mutex` itself: on Linux the standard library's `Mutex` parks and hands over a contended
/// lock with raw futex system calls, which ThreadSanitizer cannot see, so every contended hand-over
/// looked to it like a data race — 16 reports in one run of the suite, on state only ever touched
/// inside `withLock` (docs/SANITIZERS.md has the 10-line program that shows it). This lock is a
/// `pthread_mutex_t`, which ThreadSanitizer intercepts and models, so `make tsan` sees every
/// hand-over as the happens-before edge it is, and a real race is not lost among false ones.
/// Uncontended, both cost an atomic exchange; the lock is not recursive.
public final class Locked<Value>: @unchecked Sendable {
    // @unchecked Sendable — the thread rule: `value` is read and written only inside `withLock`,
    // between `pthread_mutex_lock` and `pthread_mutex_unlock` on `mutex`, and `mutex` is initialised
    // in `init` before the object is shared and destroyed in `deinit` after the last reference.
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private var value: Value

    /// A lock around `value`.
    public init(_ value: sending Value) {
        self.value = value
        mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        pthread_mutex_init(mutex, nil)
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deinitialize(count: 1)
        mutex.deallocate()
    }

    /// Runs `body` with the value, holding the lock; it is released when `body` returns or throws.
    public func withLock<Result, Failure: Error>(
        _ body: (inout sending Value) throws(Failure) -> sending Result
    ) throws(Failure) -> sending Result {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&value)
    }
}
