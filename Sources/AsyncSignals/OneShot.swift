/// A value given once and awaited by any number of tasks: waiters before the value suspend and are
/// resumed together when it is given; waiters after it get it at once. Giving it again changes
/// nothing (the first value stands).
public final class OneShot<Value: Sendable>: Sendable {
    private struct State {
        var value: Value?
        var waiters: [CheckedContinuation<Value, Never>] = []
    }

    private let state = Locked(State())

    /// Creates an empty one-shot.
    public init() {}

    /// Gives the value; returns false (and keeps the first) when it was given already.
    @discardableResult
    public func give(_ value: Value) -> Bool {
        let waiters: [CheckedContinuation<Value, Never>]? = state.withLock { state in
            guard state.value == nil else { return nil }
            state.value = value
            defer { state.waiters = [] }
            return state.waiters
        }
        guard let waiters else { return false }
        for waiter in waiters { waiter.resume(returning: value) }
        return true
    }

    /// The value, if given.
    public var current: Value? { state.withLock { $0.value } }

    /// The value, once given.
    public var value: Value {
        get async {
            await withCheckedContinuation { continuation in
                let ready: Value? = state.withLock { state in
                    if let value = state.value { return value }
                    state.waiters.append(continuation)
                    return nil
                }
                if let ready { continuation.resume(returning: ready) }
            }
        }
    }
}
