
/// Set once on shutdown; runs the registered stop action.
public final class StopFlag: Sendable {
    /// Creates a flag that is not set.
    public init() {}

    private let state = Locked<(stopped: Bool, action: (@Sendable () -> Void)?)>((false, nil))

    /// True once ``stop()`` was called.
    public var isStopped: Bool { state.withLock { $0.stopped } }

    /// Sets the flag and runs the action registered, if any.
    public func stop() {
        let action = state.withLock { state in
            state.stopped = true
            return state.action
        }
        action?()
    }

    /// Registers the action to run on stop (replacing any before it); runs it now if already stopped.
    public func onStop(_ action: @escaping @Sendable () -> Void) {
        let stoppedAlready = state.withLock { state in
            state.action = action
            return state.stopped
        }
        if stoppedAlready { action() }
    }
}
