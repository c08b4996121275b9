import AsyncSignals

/// A clock that moves only when a test calls ``advance(by:)``; sleepers wake in deadline order.
public final class ManualClock: Clock, Sendable {
    public typealias Duration = Swift.Duration

    /// Creates a clock at offset zero.
    public init() {}

    public struct Instant: InstantProtocol {
        public var offset: Swift.Duration

        public func advanced(by duration: Swift.Duration) -> Instant { Instant(offset: offset + duration) }
        public func duration(to other: Instant) -> Swift.Duration { other.offset - offset }
        public static func < (lhs: Instant, rhs: Instant) -> Bool { lhs.offset < rhs.offset }
    }

    private struct Sleeper {
        var id: Int
        var deadline: Instant
        var continuation: CheckedContinuation<Void, any Error>
    }

    private struct State {
        var now = Instant(offset: .zero)
        var sleepers: [Sleeper] = []
        var nextID = 0
    }

    private let state = Locked(State())

    public var now: Instant { state.withLock { $0.now } }
    public var minimumResolution: Swift.Duration { .zero }

    public func sleep(until deadline: Instant, tolerance: Swift.Duration?) async throws {
        let id = state.withLock { state in
            state.nextID += 1
            return state.nextID
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let immediate: Result<Void, any Error>? = state.withLock { state in
                    if Task.isCancelled { return .failure(CancellationError()) }
                    if deadline <= state.now { return .success(()) }
                    state.sleepers.append(Sleeper(id: id, deadline: deadline, continuation: continuation))
                    return nil
                }
                if let immediate { continuation.resume(with: immediate) }
            }
        } onCancel: {
            let sleeper = state.withLock { state -> Sleeper? in
                guard let index = state.sleepers.firstIndex(where: { $0.id == id }) else { return nil }
                return state.sleepers.remove(at: index)
            }
            sleeper?.continuation.resume(throwing: CancellationError())
        }
    }

    /// The deadlines of the sleepers waiting now.
    public var pendingDeadlines: [Instant] { state.withLock { $0.sleepers.map(\.deadline) } }

    /// Moves time forward and wakes every sleeper whose deadline has come.
    public func advance(by duration: Swift.Duration) {
        let woken = state.withLock { state -> [Sleeper] in
            state.now = state.now.advanced(by: duration)
            let now = state.now
            let due = state.sleepers.filter { $0.deadline <= now }.sorted { $0.deadline < $1.deadline }
            state.sleepers.removeAll { $0.deadline <= now }
            return due
        }
        for sleeper in woken { sleeper.continuation.resume() }
    }
}
