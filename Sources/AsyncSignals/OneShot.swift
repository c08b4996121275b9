/// A value given once and awaited by any number of tasks: waiters before the value suspend and are
/// resumed together when it is given; waiters after it get it at once. Giving it again changes
/// nothing (the first value stands). A callback (``whenGiven(_:)``) is a waiter without a task.
public final class OneShot<Value: Sendable>: Sendable {
    private struct State {
        var value: Value?
        var waiters: [CheckedContinuation<Value, Never>] = []
        var callbacks: [@Sendable (Value) -> Void] = []
    }

    private let state = Locked(State())

    /// Creates an empty one-shot.
    public init() {}

    /// Gives the value; returns false (and keeps the first) when it was given already.
    @discardableResult
    public func give(_ value: Value) -> Bool {
        let given = state.withLock { state -> ([CheckedContinuation<Value, Never>], [@Sendable (Value) -> Void])? in
            guard state.value == nil else { return nil }
            state.value = value
            defer {
                state.waiters = []
                state.callbacks = []
            }
            return (state.waiters, state.callbacks)
        }
        guard let (waiters, callbacks) = given else { return false }
        for waiter in waiters { waiter.resume(returning: value) }
        for callback in callbacks { callback(value) }
        return true
    }

    /// Calls `callback` with the value once given (at once, on this thread, when it was given
    /// already; else on the thread that gives it).
    public func whenGiven(_ callback: @escaping @Sendable (Value) -> Void) {
        let ready: Value? = state.withLock { state in
            if let value = state.value { return value }
            state.callbacks.append(callback)
            return nil
        }
        if let ready { callback(ready) }
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
