import Foundation

/// Runs `body`, which blocks (waits for a child process, reads a pipe, polls a browser), on a thread
/// of its own and returns its result.
///
/// Swift's cooperative pool has one thread per core, two on the CI machine. A test that blocks one of
/// them while another test blocks the other stops every task in the process: the in-process servers,
/// the curl loops' continuations and every other test's waits. Three unrelated tests timed out
/// together in CI that way while one test waited for an agent to exit and another for Chromium to
/// start.
public func offThePool<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Thread.detachNewThread {
            continuation.resume(with: Result { try body() })
        }
    }
}

/// ``offThePool(_:)`` for a body that cannot throw.
public func offThePool<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
    await withCheckedContinuation { continuation in
        Thread.detachNewThread {
            continuation.resume(returning: body())
        }
    }
}
