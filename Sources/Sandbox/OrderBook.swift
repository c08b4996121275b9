import AsyncSignals
import CheckedInput
public import Foundation
import JSONToolkit
import ServerSentEvents

/// How a Sandbox mutation is announced on the event stream.
public enum OrderAnnouncement: Sendable, Hashable {
    /// `{"order": {...}}`: the full body.
    case fullBody
    /// `{"order_id": 12, "version": 8}`: the client must fetch.
    case idOnly
    /// No event at all: only a full sync or a fetch will see it.
    case silent
}

/// The Sandbox's orders and the event log that announces their changes (DESIGN §3), for the sync
/// tests: a REST view (`GET /v1/orders`, `GET /v1/orders/{id}`) and a stream view with retention —
/// a `Last-Event-ID` older than the retained log gets `orders.resync`.
public final class OrderBook: Sendable {
    private struct Event {
        var sequence: Int
        var wire: String
    }

    private struct State {
        var orders: [Int: [String: String]] = [:]  // id → field → JSON-encoded value
        /// The keys of `orders`, ascending (ids only grow, so a create appends): a page is a binary
        /// search and a slice, not a sort of every id, so a book of 100,000 orders pages quickly.
        var ids: [Int] = []
        var versions: [Int: Int] = [:]
        var log: [Event] = []
        var sequence = 0
        var nextID = 1
        var failingFetches: [Int] = []
        var slowFetches: [Duration] = []
        var failingPages: [Int: Int] = [:]  // page index → status, once
        var brokenOrders: [Int: Int] = [:]  // order id → status, until healed
        var outage: Int?  // every orders request answers this status, until healed
        var watchers: [Int: AsyncStream<Void>.Continuation] = [:]
        var dropBudgets: [Int] = []
        var cuts = 0
        var nextWatcher = 0
    }

    private let state = Locked(State())
    /// How many events the log keeps; older cursors get `orders.resync`.
    public let retention: Int
    /// The wall clock (Unix seconds): an order's `updated_at` is the time of its last change.
    private let now: @Sendable () -> Double

    /// Creates an empty book; `now` stamps each change's `updated_at`.
    public init(retention: Int = 10_000, now: @escaping @Sendable () -> Double = { Date().timeIntervalSince1970 }) {
        self.retention = max(1, retention)
        self.now = now
    }

    // MARK: Mutations (tests)

    /// Creates an order and announces it; returns its id. Without a `note`, the note is
    /// `order N — ünïcode` (non-ASCII on purpose); `totalCents` adds `total_cents`.
    @discardableResult
    public func create(
        status: String = "created", storeID: Int = 1, totalCents: Int? = nil, note: String? = nil,
        announce: OrderAnnouncement = .fullBody
    ) -> Int {
        let stamp = Self.timestamp(now())
        return mutate { state in
            let id = state.nextID
            state.nextID += 1
            state.ids.append(id)
            var fields = ["id": "\(id)", "status": JSONText.string(status), "store_id": "\(storeID)",
                          "courier_id": "null", "note": JSONText.string(note ?? "order \(id) \u{2014} ünïcode"),
                          "updated_at": JSONText.string(stamp)]
            if let totalCents { fields["total_cents"] = "\(totalCents)" }
            state.orders[id] = fields
            return (id, "order.created", announce)
        }
    }

    /// Changes an order's status (and version, and `updated_at` to now) and announces it; a
    /// `courierID` assigns that courier too.
    public func update(_ id: Int, status: String, courierID: Int? = nil, announce: OrderAnnouncement = .fullBody) {
        let stamp = Self.timestamp(now())
        _ = mutate { state in
            guard state.orders[id] != nil else { return nil }
            state.orders[id]?["status"] = JSONText.string(status)
            state.orders[id]?["updated_at"] = JSONText.string(stamp)
            if let courierID { state.orders[id]?["courier_id"] = "\(courierID)" }
            return (id, "order.status_changed", announce)
        }
    }

    /// Unix seconds as RFC 3339 UTC, whole seconds (a clock outside years 0000–9999 reads as the epoch).
    static func timestamp(_ seconds: Double) -> String {
        let milliseconds = Checked.int64(clamping: (seconds * 1_000).rounded(.down))
        return Checked.rfc3339(unixMilliseconds: milliseconds, fraction: false) ?? "1970-01-01T00:00:00Z"
    }

    /// Deletes an order and announces it (`order.deleted` carries only id and version).
    public func delete(_ id: Int, announce: Bool = true) {
        state.withLock { state in
            guard state.orders.removeValue(forKey: id) != nil else { return }
            let position = Self.firstIndex(after: id - 1, in: state.ids)
            if position < state.ids.count, state.ids[position] == id { state.ids.remove(at: position) }
            let version = (state.versions[id] ?? 0) + 1
            state.versions[id] = version
            if announce {
                append(type: "order.deleted", data: #"{"order_id":\#(id),"version":\#(version)}"#, state: &state)
            }
        }
    }

    /// The next fetches of single orders answer these statuses.
    public func failFetches(_ statuses: [Int]) {
        state.withLock { $0.failingFetches += statuses }
    }

    /// The next fetches of single orders answer only after these delays, one per fetch.
    public func delayFetches(_ delays: [Duration]) {
        state.withLock { $0.slowFetches += delays }
    }

    /// The delay of the next single-order fetch, if one is scheduled.
    func takeFetchDelay() -> Duration? {
        state.withLock { $0.slowFetches.isEmpty ? nil : $0.slowFetches.removeFirst() }
    }

    /// The next stream connections are cut abruptly after this many body bytes each (usually in the
    /// middle of an event), one budget per connection.
    public func dropNextStreams(afterBytes budgets: [Int]) {
        state.withLock { $0.dropBudgets += budgets }
    }

    /// Breaks every open stream connection now (between events).
    public func dropOpenStreams() {
        let watchers = state.withLock { state in
            state.cuts += 1
            return Array(state.watchers.values)
        }
        for watcher in watchers { watcher.yield() }
    }

    /// How many times ``dropOpenStreams()`` was called; a stream ends when it changes.
    var cuts: Int { state.withLock { $0.cuts } }

    /// The byte budget of a new stream connection, if one is scheduled.
    func takeDropBudget() -> Int? {
        state.withLock { $0.dropBudgets.isEmpty ? nil : $0.dropBudgets.removeFirst() }
    }

    /// Every fetch of order `id` answers `status` until ``healOrder(_:)``: an order the backend cannot
    /// serve (a bug on its side, a locked row) while it serves every other.
    public func breakOrder(_ id: Int, status: Int) {
        state.withLock { $0.brokenOrders[id] = status }
    }

    /// Order `id` is served again.
    public func healOrder(_ id: Int) {
        state.withLock { _ = $0.brokenOrders.removeValue(forKey: id) }
    }

    /// Every orders request (single orders and pages) answers `status` until ``endOutage()``: the
    /// orders endpoint is down (a deploy, a failover). The event stream is not affected.
    public func beginOutage(status: Int = 503) {
        state.withLock { $0.outage = status }
    }

    /// The orders endpoint answers again.
    public func endOutage() {
        state.withLock { $0.outage = nil }
    }

    /// The next request for page `index` (0-based) of the orders list answers `status`, once.
    public func failPage(_ index: Int, status: Int) {
        state.withLock { $0.failingPages[index] = status }
    }

    /// The sequence number (event id) of the newest event.
    public var latestSequence: Int {
        state.withLock { $0.sequence }
    }

    /// The current orders, as the backend sees them: id → (status, version).
    public var snapshot: [String: (status: String, version: Int)] {
        state.withLock { state in
            var result: [String: (status: String, version: Int)] = [:]
            for (id, fields) in state.orders {
                let status = (fields["status"] ?? "\"\"").trimmingCharacters(in: CharacterSet(charactersIn: "\""))
                result["\(id)"] = (status, state.versions[id] ?? 0)
            }
            return result
        }
    }

    // MARK: REST

    enum Answer {
        case json(String)
        case status(Int)
    }

    /// One order, 404 when gone.
    func fetch(_ id: Int) -> Answer {
        state.withLock { state in
            if let outage = state.outage { return .status(outage) }
            if let broken = state.brokenOrders[id] { return .status(broken) }
            if !state.failingFetches.isEmpty { return .status(state.failingFetches.removeFirst()) }
            guard let fields = state.orders[id] else { return .status(404) }
            return .json(Self.json(fields, version: state.versions[id] ?? 0))
        }
    }

    /// A page of orders in id order: `{"orders": [...], "next_cursor": "..." | null}`.
    func page(limit: Int, cursor: String?) -> Answer {
        state.withLock { state in
            if let outage = state.outage { return .status(outage) }
            let after = cursor.flatMap { Checked.int(decimal: $0, in: 0...Int.max) } ?? 0
            let start = Self.firstIndex(after: after, in: state.ids)
            let index = start / max(1, limit)
            if let failure = state.failingPages.removeValue(forKey: index) { return .status(failure) }
            let slice = state.ids[start...].prefix(max(1, limit))
            let orders = slice.compactMap { id in state.orders[id].map { Self.json($0, version: state.versions[id] ?? 0) } }
            let next = slice.endIndex < state.ids.endIndex ? slice.last.map { #""\#($0)""# } ?? "null" : "null"
            return .json(#"{"orders":[\#(orders.joined(separator: ","))],"next_cursor":\#(next)}"#)
        }
    }

    // MARK: Stream

    /// Events after `lastEventID` as wire text, or an `orders.resync` when that cursor is older
    /// than the retained log; and the sequence the caller has now seen.
    func events(after lastEventID: Int) -> (wire: String, seen: Int) {
        state.withLock { state in
            guard let oldest = state.log.first?.sequence, lastEventID < state.sequence else {
                return ("", max(lastEventID, state.sequence))
            }
            if lastEventID < oldest - 1 {
                return (ServerSentEventWriter.event("orders.resync", id: String(state.sequence), data: "{}"), state.sequence)
            }
            let wire = state.log.filter { $0.sequence > lastEventID }.map(\.wire).joined()
            return (wire, state.sequence)
        }
    }

    /// A signal each time an event is appended; finish by calling the returned cancel.
    func watch() -> (AsyncStream<Void>, @Sendable () -> Void) {
        let (stream, continuation) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        let key = state.withLock { state in
            let key = state.nextWatcher
            state.nextWatcher += 1
            state.watchers[key] = continuation
            return key
        }
        return (stream, { [self] in
            let removed = state.withLock { $0.watchers.removeValue(forKey: key) }
            removed?.finish()
        })
    }

    // MARK: Internals

    private func mutate(_ change: (inout State) -> (Int, String, OrderAnnouncement)?) -> Int {
        state.withLock { state in
            guard let (id, type, announce) = change(&state) else { return 0 }
            let version = (state.versions[id] ?? 0) + 1
            state.versions[id] = version
            switch announce {
            case .fullBody:
                let body = Self.json(state.orders[id] ?? [:], version: version)
                append(type: type, data: #"{"order":\#(body)}"#, state: &state)
            case .idOnly:
                append(type: type, data: #"{"order_id":\#(id),"version":\#(version)}"#, state: &state)
            case .silent:
                break
            }
            return id
        }
    }

    private func append(type: String, data: String, state: inout State) {
        state.sequence += 1
        state.log.append(Event(sequence: state.sequence, wire: ServerSentEventWriter.event(type, id: String(state.sequence), data: data)))
        if state.log.count > retention { state.log.removeFirst(state.log.count - retention) }
        for watcher in state.watchers.values { watcher.yield() }
    }

    /// The position of the first id greater than `id` in the ascending `ids`.
    private static func firstIndex(after id: Int, in ids: [Int]) -> Int {
        var low = 0
        var high = ids.count
        while low < high {
            let middle = low + (high - low) / 2
            if ids[middle] <= id { low = middle + 1 } else { high = middle }
        }
        return low
    }

    private static func json(_ fields: [String: String], version: Int) -> String {
        var all = fields
        all["version"] = "\(version)"
        return "{" + all.keys.sorted().map { #""\#($0)":\#(all[$0] ?? "null")"# }.joined(separator: ",") + "}"
    }
}
