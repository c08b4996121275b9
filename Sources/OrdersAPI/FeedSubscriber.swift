import AsyncSignals
import NIOCore
import OrderStore

/// One subscriber of the change feed: a bounded queue between the hub (which offers every committed
/// change and never waits) and the subscriber's connection (which takes what is queued and writes
/// it). When the queue holds `capacity` events and another comes, the subscriber is cut off: the
/// queue is dropped and the connection ends with `overflow` (DESIGN §11), so no subscriber slows
/// another or holds memory without bound.
final class FeedSubscriber: Sendable {
    /// Why a subscriber's stream ends.
    enum Ending: Sendable, Equatable {
        /// It fell `capacity` changes behind.
        case overflow
        /// The agent is shutting down.
        case closed
        /// The hub lost its place in the change log (a user switch): reconnect to resume or reset.
        case resync
    }

    /// One queued event.
    struct Item: Sendable {
        /// The change's seq.
        var seq: Int64
        /// The SSE text.
        var bytes: ByteBuffer
        /// When the change was applied, Unix seconds (for the feed-lag metric).
        var at: Double
    }

    /// What the connection writes next.
    enum Next: Sendable {
        /// Queued events, oldest first.
        case items([Item])
        /// A heartbeat comment: nothing was sent for a whole heartbeat interval.
        case heartbeat
        /// The stream ends.
        case end(Ending)
    }

    private struct State {
        var queue: [Item] = []
        var ending: Ending?
        var heartbeatDue = false
        var sentSinceTick = false
        var waiter: CheckedContinuation<Void, Never>?
        /// Changes up to this seq came with the subscriber's snapshot or backlog; skipped when offered.
        var skipThrough = Int64.min

        var isReady: Bool { !queue.isEmpty || ending != nil || heartbeatDue }
    }

    /// The view.
    let filter: OrderFilter
    /// The most events queued before it is cut off.
    let capacity: Int
    /// The event loop of the subscriber's connection: its live loop runs there, and the hub wakes it there.
    let eventLoop: any EventLoop
    private let state = Locked(State())

    init(filter: OrderFilter, capacity: Int, eventLoop: any EventLoop) {
        self.filter = filter
        self.capacity = max(1, capacity)
        self.eventLoop = eventLoop
    }

    /// What an offer did.
    struct Offered {
        /// This offer cut the subscriber off.
        var cutOff = false
        /// Events queued after it.
        var queued = 0
        /// The connection was waiting: whoever offered must resume it (``ChangeHub`` resumes a
        /// loop's connections together, in one job on that loop).
        var waiter: CheckedContinuation<Void, Never>?
    }

    /// Queues the change's event for this view, if any; cuts the subscriber off when the queue is
    /// full. Never waits; the caller resumes the returned waiter.
    func offer(_ change: FeedChange) -> Offered {
        guard let bytes = change.bytes(for: filter) else { return Offered() }
        let item = Item(seq: change.change.seq, bytes: bytes, at: change.change.at)
        return state.withLock { state -> Offered in
            if state.ending != nil || item.seq <= state.skipThrough { return Offered(queued: state.queue.count) }
            defer { state.waiter = nil }
            if state.queue.count >= capacity {
                state.ending = .overflow
                state.queue = []
                return Offered(cutOff: true, waiter: state.waiter)
            }
            state.queue.append(item)
            return Offered(queued: state.queue.count, waiter: state.waiter)
        }
    }

    /// The snapshot or backlog the connection sent runs to `seq`: queued changes up to it are dropped
    /// and later offers of them ignored.
    func caughtUp(through seq: Int64) {
        state.withLock { state in
            state.skipThrough = seq
            state.queue.removeAll { $0.seq <= seq }
        }
    }

    /// The hub's heartbeat tick: a subscriber that was sent nothing since the last tick gets a heartbeat.
    func tick() {
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            defer { state.sentSinceTick = false }
            guard !state.sentSinceTick, state.ending == nil else { return nil }
            state.heartbeatDue = true
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume()
    }

    /// Ends the stream (queued events are still written first, except after an overflow).
    func end(_ ending: Ending) {
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            if state.ending == nil { state.ending = ending }
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume()
    }

    /// True once the stream has been told to end.
    var hasEnded: Bool { state.withLock { $0.ending != nil } }

    /// Waits for what to write next.
    func next() async -> Next {
        while true {
            let taken = state.withLock { state -> Next? in
                if !state.queue.isEmpty {
                    state.sentSinceTick = true
                    state.heartbeatDue = false
                    defer { state.queue = [] }
                    return .items(state.queue)
                }
                if let ending = state.ending { return .end(ending) }
                if state.heartbeatDue {
                    state.heartbeatDue = false
                    state.sentSinceTick = true
                    return .heartbeat
                }
                return nil
            }
            if let taken { return taken }
            // A cancelled connection task (the server's task group ending) ends the stream as a
            // shutdown does, so no connection waits for a change that never comes.
            if Task.isCancelled { end(.closed) }
            await withTaskCancellationHandler {
                await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                    let ready = state.withLock { state -> Bool in
                        if state.isReady { return true }
                        state.waiter = continuation
                        return false
                    }
                    if ready { continuation.resume() }
                }
            } onCancel: {
                end(.closed)
            }
        }
    }
}
