extension Clock where Duration == Swift.Duration {
    /// Sleeps until `deadline`, at most `slice` at a time; throws `CancellationError` when cancelled.
    ///
    /// For a sleep that is usually cancelled before its deadline (a waiter woken early by a signal):
    /// on Linux a cancelled sleep keeps its timer, and about 700 bytes with it, until its original
    /// deadline. A waiter woken after every commit with a 15 s deadline, or an idle watcher cancelled
    /// at every reconnect with a 45 s one, held memory in proportion to the wake-ups of that window;
    /// sliced, it holds at most a slice's worth.
    public func sleepInSlices(until deadline: Instant, slice: Swift.Duration = .seconds(1)) async throws {
        while now < deadline {
            try await sleep(until: Swift.min(deadline, now.advanced(by: slice)), tolerance: nil)
        }
    }
}
