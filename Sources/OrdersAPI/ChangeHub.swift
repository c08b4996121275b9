public import AsyncSignals
public import CoreMetrics
public import Foundation
public import Logging
import NIOCore
public import StoreModel

/// The change feed's metrics (DESIGN §11), made through an injected factory.
public struct FeedMetrics: Sendable {
    /// How a subscription started; the `outcome` label of `orderlive_api_feed_starts_total`.
    public enum Start: String, Sendable, CaseIterable {
        /// No id: snapshot then live.
        case new
        /// Resumed from an id in the kept history.
        case resumed
        /// The id could not be resumed: reset, then a snapshot.
        case reset
        /// Refused with 503: `api.max_subscribers` were connected, or the agent is stopping.
        case refused
    }

    let subscribers: Gauge
    let delivered: Counter
    let cutOffs: Counter
    let starts: [Start: Counter]
    let lag: CoreMetrics.Timer

    /// Creates the metrics in `factory`.
    public init(factory: any MetricsFactory) {
        subscribers = Gauge(label: "orderlive_api_subscribers", factory: factory)
        delivered = Counter(label: "orderlive_api_changes_delivered_total", factory: factory)
        cutOffs = Counter(label: "orderlive_api_subscribers_cut_off_total", factory: factory)
        var starts: [Start: Counter] = [:]
        for start in Start.allCases {
            starts[start] = Counter(
                label: "orderlive_api_feed_starts_total", dimensions: [("outcome", start.rawValue)], factory: factory)
        }
        self.starts = starts
        lag = CoreMetrics.Timer(label: "orderlive_api_feed_lag_seconds", factory: factory)
    }

    /// The `# HELP` text of each family made here (swift-metrics has no place for it; the agent's
    /// `/metrics` adds these lines).
    public static let help: [String: String] = [
        "orderlive_api_subscribers": "Change-feed subscribers connected",
        "orderlive_api_changes_delivered_total": "Changes written to change-feed subscribers",
        "orderlive_api_subscribers_cut_off_total": "Change-feed subscribers cut off for falling api.subscriber_buffer changes behind",
        "orderlive_api_feed_starts_total": "Change-feed subscriptions by how they started",
        "orderlive_api_feed_lag_seconds": "From a change's commit to its delivery to a subscriber",
    ]

    func record(_ start: Start) {
        starts[start]?.increment()
    }
}

/// The one fan-out hub of the change feed (DESIGN §11): after each commit that appended changes, the
/// store wakes it (a signal; the executor never waits for it); it reads what was appended once,
/// makes each event's text once, and offers it to every subscriber's bounded queue in `seq` order.
/// It also prunes the change log beyond its history. Heartbeats are each connection's own
/// (``FeedConnection``): a stream gets one whenever nothing was written to it for `heartbeat`.
public final class ChangeHub: Sendable {
    /// The feed's limits.
    public struct Configuration: Sendable {
        /// More subscribers than this are refused (503).
        public var maximumSubscribers: Int
        /// Changes queued for one subscriber before it is cut off.
        public var subscriberBuffer: Int
        /// An idle stream gets a comment line whenever nothing was written to it for this long.
        public var heartbeat: Duration
        /// Changes kept for subscribers that resume.
        public var historyChanges: Int

        /// Creates a configuration with DESIGN §11's defaults.
        public init(maximumSubscribers: Int = 10_000, subscriberBuffer: Int = 1_024, heartbeat: Duration = .seconds(15),
                    historyChanges: Int = 100_000) {
            self.maximumSubscribers = max(1, maximumSubscribers)
            self.subscriberBuffer = max(1, subscriberBuffer)
            self.heartbeat = heartbeat
            self.historyChanges = max(1, historyChanges)
        }
    }

    private struct State {
        var subscribers: [ObjectIdentifier: FeedSubscriber] = [:]
        var closed = false
        var peakQueued = 0
    }

    let configuration: Configuration
    let store: any ChangeFeedSource
    let metrics: FeedMetrics
    private let wake: WakeSignal
    private let logger: Logger
    private let now: @Sendable () -> Double
    private let state = Locked(State())
    private let stopped = StopFlag()
    /// Signalled when a subscriber comes or goes.
    private let membership = WakeSignal()

    /// Creates a hub over `store`; `wake` is signalled by the store after each commit that appended
    /// changes. `now` is the wall clock in Unix seconds (for the lag metric).
    public init(
        configuration: Configuration, store: any ChangeFeedSource, wake: WakeSignal, metrics: FeedMetrics,
        now: @escaping @Sendable () -> Double = { Date().timeIntervalSince1970 }, logger: Logger
    ) {
        self.configuration = configuration
        self.store = store
        self.wake = wake
        self.metrics = metrics
        self.now = now
        self.logger = logger
    }

    /// How many subscribers are connected.
    public var subscriberCount: Int { state.withLock { $0.subscribers.count } }

    /// Waits until the number of subscribers is no longer `count`, or `timeout` passes; returns the
    /// number then. For one waiter at a time (operations and tests watching connections drain).
    public func subscriberCountChange(from count: Int, within timeout: Duration) async -> Int {
        let clock = ContinuousClock()
        let deadline = clock.now.advanced(by: timeout)
        while true {
            let current = subscriberCount
            if current != count || clock.now >= deadline || Task.isCancelled { return current }
            await membership.wait(until: deadline, clock: clock)
        }
    }

    /// The most events ever queued for one subscriber (at most `subscriber_buffer`: the memory bound).
    package var peakQueuedEvents: Int { state.withLock { $0.peakQueued } }

    /// Registers a subscriber, or nil when `max_subscribers` are connected or the hub is closed.
    /// Every change the hub reads after this call is offered to it; what was committed before it
    /// the caller reads from the store (snapshot or backlog) and then calls ``FeedSubscriber/caughtUp(through:)``.
    func subscribe(filter: OrderFilter, principal: APIPrincipal = .anyone, on channel: any Channel) -> FeedSubscriber? {
        let subscriber = FeedSubscriber(filter: filter, principal: principal, capacity: configuration.subscriberBuffer,
                                        channel: channel, hub: self)
        let count = state.withLock { state -> Int? in
            guard !state.closed, state.subscribers.count < configuration.maximumSubscribers else { return nil }
            state.subscribers[ObjectIdentifier(subscriber)] = subscriber
            return state.subscribers.count
        }
        guard let count else { return nil }
        metrics.subscribers.record(count)
        membership.signal()
        return subscriber
    }

    /// Removes a subscriber whose connection ended; a second call for it does nothing.
    func unsubscribe(_ subscriber: FeedSubscriber) {
        let count = state.withLock { state in
            let id = ObjectIdentifier(subscriber)
            if state.subscribers[id] === subscriber { state.subscribers[id] = nil }
            return state.subscribers.count
        }
        metrics.subscribers.record(count)
        membership.signal()
    }

    /// Ends the streams of every subscriber whose principal `ends` says (queued events are written
    /// first): credentials revoked on SIGHUP or a session signed out. Returns how many.
    @discardableResult
    func endSubscribers(where ends: (APIPrincipal) -> Bool) -> Int {
        let subscribers = state.withLock { state in state.subscribers.values.filter { ends($0.principal) } }
        for subscriber in subscribers { subscriber.end(.credentialsEnded) }
        return subscribers.count
    }

    /// Ends every stream (queued events are written first) and refuses new subscribers: graceful shutdown.
    public func close() {
        let subscribers = state.withLock { state in
            state.closed = true
            return Array(state.subscribers.values)
        }
        for subscriber in subscribers { subscriber.end(.closed) }
        stopped.stop()
        wake.signal()
    }

    /// Fans changes out until ``close()`` or cancellation. Reads from the store's head at start.
    public func run() async {
        var head: Int64
        while true {
            do {
                head = try await store.changeHead()
                break
            } catch {
                logger.error("the change feed cannot read the order store; retrying", metadata: ["api.reason": "\(error)"])
                if await pause(.seconds(1)) { return }
            }
        }
        let clock = ContinuousClock()
        var sincePrune = Self.pruneEvery
        while !stopped.isStopped, !Task.isCancelled {
            do {
                let fannedOut = try await fanOut(after: &head)
                sincePrune += fannedOut
                if sincePrune >= Self.pruneEvery {
                    sincePrune = 0
                    try await prune()
                }
            } catch {
                logger.error("the change feed cannot read the order store; retrying", metadata: ["api.reason": "\(error)"])
                if await pause(.seconds(1)) { return }
                continue
            }
            // Woken by each commit that appended changes, and by close(); the deadline only bounds the wait.
            await wake.wait(until: clock.now.advanced(by: .seconds(60)), clock: clock)
        }
    }

    /// Prune after this many changes were fanned out (and once at start): off the hot path, in batches.
    static let pruneEvery = 1_000

    /// Reads every change after `head` and offers each to every subscriber; returns how many.
    private func fanOut(after head: inout Int64) async throws -> Int {
        // With nobody subscribed, nothing is read or encoded: the hub only moves to the log's head.
        // The head is read before the (empty) list is taken, so whoever subscribes afterwards reads
        // its snapshot after that head and misses nothing.
        let latest = try await store.changeHead()
        if state.withLock({ $0.subscribers.isEmpty }) {
            let (skipped, overflow) = latest.subtractingReportingOverflow(head)
            head = latest
            return overflow || skipped < 0 ? 0 : Int(clamping: skipped)
        }
        var total = 0
        while true {
            let changes = try await store.appendedChanges(after: head, limit: Self.readBatch)
            guard !changes.isEmpty else { return total }
            let subscribers = state.withLock { Array($0.subscribers.values) }
            var expected = head
            var peak = 0
            var waking = Waking()
            defer {
                state.withLock { $0.peakQueued = max($0.peakQueued, peak) }
                waking.flush()
            }
            for change in changes {
                let (following, overflow) = expected.addingReportingOverflow(1)
                if overflow || change.seq != following {
                    // Changes the hub had not sent were removed (a user switch cleared the previous
                    // user's history): every subscriber reconnects, and resumes or resets by its id.
                    logger.notice("the change log moved past the feed (a user switch); subscribers reconnect",
                                  metadata: ["api.seq": "\(change.seq)"])
                    for subscriber in subscribers { subscriber.end(.resync) }
                    head = changes.last?.seq ?? head
                    return total + changes.count
                }
                expected = change.seq
                let shared = FeedChange(change)
                for subscriber in subscribers {
                    let offered = subscriber.offer(shared)
                    peak = max(peak, offered.queued)
                    if offered.wake { waking.add(subscriber) }
                    if offered.cutOff {
                        metrics.cutOffs.increment()
                        logger.notice("a change-feed subscriber fell behind and was cut off",
                                      metadata: ["api.buffer": "\(configuration.subscriberBuffer)"])
                    }
                }
                waking.flushIfDue()
            }
            head = expected
            total += changes.count
            if changes.count < Self.readBatch { return total }
        }
    }

    /// Changes read from the store at once.
    static let readBatch = 1_000

    /// The connections the hub must wake, by event loop. Each loop gets one job that writes to all
    /// of its own (one hand-off per loop, not one per subscriber), after as many changes as were
    /// offered in ``flushInterval``: a burst is written in a few large writes, and no change waits
    /// longer than that to be written.
    private struct Waking {
        private var waiting: [ObjectIdentifier: (loop: any EventLoop, subscribers: [FeedSubscriber])] = [:]
        private var since = ContinuousClock.now

        static let flushInterval = Duration.milliseconds(5)

        mutating func add(_ subscriber: FeedSubscriber) {
            let loop = subscriber.connection.eventLoop
            waiting[ObjectIdentifier(loop), default: (loop, [])].subscribers.append(subscriber)
        }

        mutating func flushIfDue() {
            if !waiting.isEmpty, ContinuousClock.now - since >= Self.flushInterval { flush() }
        }

        mutating func flush() {
            for (_, group) in waiting {
                let subscribers = group.subscribers
                group.loop.execute {
                    for subscriber in subscribers { subscriber.connection.write(subscriber) }
                }
            }
            waiting = [:]
            since = ContinuousClock.now
        }
    }

    private func prune() async throws {
        var removed = 0
        while true {
            let batch = try await store.pruneChanges(keeping: configuration.historyChanges, batch: 10_000)
            removed += batch
            if batch < 10_000 { break }
        }
        if removed > 0 { logger.debug("change log pruned", metadata: ["api.removed": "\(removed)"]) }
    }

    /// Waits `duration` or until closed; true when closed.
    private func pause(_ duration: Duration) async -> Bool {
        let clock = ContinuousClock()
        await wake.wait(until: clock.now.advanced(by: duration), clock: clock)
        return stopped.isStopped || Task.isCancelled
    }

    /// The wall clock, for the lag metric.
    func lag(since at: Double) -> Double { max(0, now() - at) }
}
