import AsyncSignals
import NIOCore
import StoreModel

/// One subscriber of the change feed: a bounded queue between the hub (which offers every committed
/// change and never waits) and the subscriber's connection (which writes what is queued, on its
/// event loop, see ``FeedConnection``). When the queue holds `capacity` events and another comes, the
/// subscriber is cut off: the queue is dropped and the stream ends with `overflow` (DESIGN §11), so
/// no subscriber slows another or holds memory without bound.
///
/// Its life: a task writes the snapshot or backlog and calls ``caughtUp(through:)``, then
/// ``goLive()`` and ends; from then on the connection's event loop writes what the hub offers, and
/// when the stream ends it calls the subscriber's `finish` there, which writes the last event.
final class FeedSubscriber: Sendable {
    /// Why a subscriber's stream ends.
    enum Ending: Sendable, Equatable {
        /// It fell `capacity` changes behind.
        case overflow
        /// The agent is shutting down, or the client went away.
        case closed
        /// The hub lost its place in the change log (a user switch): reconnect to resume or reset.
        case resync
        /// The credentials it was opened with were revoked, signed out or expired.
        case credentialsEnded
    }

    /// One queued event.
    struct Item: Sendable {
        /// The change's seq.
        var seq: Int64
        /// The event's bytes.
        var bytes: FeedBytes
        /// When the change was applied, Unix seconds (for the feed-lag metric).
        var at: Double
    }

    /// What the connection writes next.
    enum Next: Sendable {
        /// Queued events, oldest first.
        case items([Item])
        /// Nothing now.
        case nothing
        /// The stream ends (after the items taken before it).
        case end(Ending)
    }

    private struct State {
        var queue: [Item] = []
        var ending: Ending?
        /// The connection's loop writes from now on.
        var live = false
        /// A write on the loop is asked for and has not run yet: further offers need no wake-up.
        var wakeAsked = false
        /// Called once, on the connection's event loop, when everything before the end is written.
        var finish: (@Sendable (Ending) -> Void)?
        /// Changes up to this seq came with the subscriber's snapshot or backlog; skipped when offered.
        var skipThrough = Int64.min

        /// Asks for a write on the loop if the connection is live and none is pending (or, for the end,
        /// even then: a socket that is not writable holds back changes, never the end); true when the
        /// caller must wake it.
        mutating func askWake(evenIfAsked: Bool = false) -> Bool {
            guard live, evenIfAsked || !wakeAsked else { return false }
            wakeAsked = true
            return true
        }
    }

    /// The view.
    let filter: OrderFilter
    /// Who subscribed, through which credentials: the feed ends when they are revoked or expire.
    let principal: APIPrincipal
    /// The most events queued before it is cut off.
    let capacity: Int
    /// The connection, whose event loop writes the live stream and whose hub wakes it there.
    let connection: FeedConnection
    private let state = Locked(State())

    init(filter: OrderFilter, principal: APIPrincipal = .anyone, capacity: Int, channel: any Channel, hub: ChangeHub) {
        self.filter = filter
        self.principal = principal
        self.capacity = max(1, capacity)
        connection = FeedConnection(channel: channel, hub: hub)
    }

    /// Sets what writes the stream's last event: called once, on the connection's event loop, after
    /// everything queued before the end was written (``FeedRequestHandler`` sets it before the
    /// subscriber goes live).
    func onFinish(_ finish: @escaping @Sendable (Ending) -> Void) {
        state.withLock { $0.finish = finish }
    }

    /// What an offer did.
    struct Offered {
        /// This offer cut the subscriber off.
        var cutOff = false
        /// Events queued after it.
        var queued = 0
        /// The connection's loop must be woken to write (``ChangeHub`` wakes a loop's connections
        /// together, in one job on that loop).
        var wake = false
    }

    /// Queues the change's event for this view, if any; cuts the subscriber off when the queue is
    /// full. Never waits; the caller wakes the connection when told to.
    func offer(_ change: FeedChange) -> Offered {
        guard let bytes = change.bytes(for: filter) else { return Offered() }
        let item = Item(seq: change.change.seq, bytes: bytes, at: change.change.at)
        return state.withLock { state -> Offered in
            if state.ending != nil || item.seq <= state.skipThrough { return Offered(queued: state.queue.count) }
            if state.queue.count >= capacity {
                state.ending = .overflow
                state.queue = []
                return Offered(cutOff: true, wake: state.askWake(evenIfAsked: true))
            }
            state.queue.append(item)
            return Offered(queued: state.queue.count, wake: state.askWake())
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

    /// The snapshot or backlog is written: the connection's event loop writes from now on.
    func goLive() {
        if state.withLock({ state in
            state.live = true
            return state.askWake()
        }) { connection.wake(self) }
    }

    /// Ends the stream (queued events are still written first, except after an overflow).
    func end(_ ending: Ending) {
        if state.withLock({ state -> Bool in
            if state.ending == nil { state.ending = ending }
            return state.askWake(evenIfAsked: true)
        }) { connection.wake(self) }
    }

    /// True once the stream has been told to end.
    var hasEnded: Bool { state.withLock { $0.ending != nil } }

    /// What to write next; called by the connection on its event loop.
    func take() -> Next {
        state.withLock { state in
            state.wakeAsked = false
            if !state.queue.isEmpty {
                defer { state.queue = [] }
                return .items(state.queue)
            }
            if let ending = state.ending { return .end(ending) }
            return .nothing
        }
    }

    /// Everything before the end is written: the last event may be written. On the event loop only.
    func reportFinished(_ ending: Ending) {
        let finish = state.withLock { state -> (@Sendable (Ending) -> Void)? in
            defer { state.finish = nil }
            return state.finish
        }
        finish?(ending)
    }
}
