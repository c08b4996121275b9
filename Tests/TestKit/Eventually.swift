/// Polls `condition` every `interval` until it holds or `limit` has passed, and returns whether it
/// held; a look that throws counts as "not yet". For state no event announces (a row another process
/// writes, a cursor a deliverer stores): where an event exists, wait on it instead (``LogWatch``,
/// ``CapturedLogs/wait(for:within:)``, an `AsyncStream`).
public func eventually(
    within limit: Duration, every interval: Duration = .milliseconds(50), _ condition: () async throws -> Bool
) async -> Bool {
    let clock = ContinuousClock()
    let deadline = clock.now.advanced(by: TestTime.bound(limit))
    while clock.now < deadline {
        if (try? await condition()) == true { return true }
        try? await Task.sleep(for: interval)
    }
    return (try? await condition()) == true
}
