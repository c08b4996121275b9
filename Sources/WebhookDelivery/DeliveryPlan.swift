import StoreModel

/// What an endpoint with several requests in flight or batches sends next (DESIGN §14): the changes
/// read from the log and not yet answered, grouped into requests so that the changes of one order are
/// never in two requests in flight together and always go in change-log order, and the contiguous
/// low-water mark below which every change was answered (the cursor that is stored).
///
/// Pure bookkeeping: no I/O, no clock of its own (times are given), so its rules are tested directly.
struct DeliveryPlan {
    /// A request's worth of changes, in change-log order.
    struct Unit: Sendable {
        var changes: [OrderChange]
        var seqs: [Int64] { changes.map(\.seq) }
        var orders: Set<String> { Set(changes.map(\.orderID)) }
    }

    /// What to do next.
    enum Next {
        /// Send this request.
        case send(Unit)
        /// A batch short of its size waits for more changes until this time (Unix seconds).
        case waitUntil(Double)
        /// Nothing can be sent until a request in flight is answered (or nothing is left).
        case nothing
    }

    /// The last change at or below which every change was answered (or skipped by the filters).
    private(set) var handled: Int64
    /// Changes read and not yet sent, in change-log order.
    private var pending: [OrderChange] = []
    /// Every change read above ``handled`` that is not yet answered, in order (the low-water mark's queue).
    private var open: [Int64] = []
    private var openStart = 0
    /// Changes answered above ``handled``.
    private(set) var answered: Set<Int64>
    /// Orders with a request in flight.
    private var busy: Set<String> = []
    /// Batches that failed, by their first change: sent again as they were, with the same id and bytes.
    private(set) var held: [Int64: [Int64]]
    /// The last change read.
    private(set) var readThrough: Int64

    /// A plan from the stored cursor `handled`, with what an earlier turn answered above it and held.
    init(handled: Int64, answered: Set<Int64>, held: [Int64: [Int64]]) {
        self.handled = handled
        self.answered = answered
        self.held = held
        self.readThrough = handled
    }

    /// Changes read but not sent yet.
    var pendingCount: Int { pending.count }

    /// Takes changes read after ``readThrough``; `wanted` says whether the endpoint's filters take one
    /// (a change they skip counts as answered at once).
    mutating func read(_ changes: [OrderChange], wanted: (OrderChange) -> Bool) {
        for change in changes where change.seq > readThrough {
            readThrough = change.seq
            guard change.seq > handled else { continue }
            open.append(change.seq)
            if answered.contains(change.seq) { continue }
            if wanted(change) { pending.append(change) } else { answered.insert(change.seq) }
        }
        advance()
    }

    /// The next request: a held batch when its orders are free, else up to `batchSize` changes of
    /// orders with nothing in flight and nothing unsent before them. A batch short of its size waits
    /// until its oldest change is `batchWait` seconds old when `atHead` (more may come); otherwise it goes.
    mutating func next(batchSize: Int, batchWait: Double, atHead: Bool, now: Double) -> Next {
        let pendingSeqs = Set(pending.map(\.seq))
        for first in held.keys.sorted() {
            guard let seqs = held[first], seqs.allSatisfy(pendingSeqs.contains) else {
                held[first] = nil
                continue
            }
            let unit = Unit(changes: pending.filter { seqs.contains($0.seq) })
            guard unit.orders.isDisjoint(with: busy) else { continue }
            take(unit)
            return .send(unit)
        }
        let heldSeqs = Set(held.values.joined())
        var blocked: Set<String> = []
        var chosen: [OrderChange] = []
        for change in pending {
            if busy.contains(change.orderID) || blocked.contains(change.orderID) || heldSeqs.contains(change.seq) {
                blocked.insert(change.orderID)
                continue
            }
            chosen.append(change)
            if chosen.count >= batchSize { break }
        }
        guard let oldest = chosen.first else { return .nothing }
        if chosen.count < batchSize, batchWait > 0, atHead, oldest.at + batchWait > now {
            return .waitUntil(oldest.at + batchWait)
        }
        let unit = Unit(changes: chosen)
        take(unit)
        return .send(unit)
    }

    private mutating func take(_ unit: Unit) {
        let seqs = Set(unit.seqs)
        pending.removeAll { seqs.contains($0.seq) }
        busy.formUnion(unit.orders)
    }

    /// A request was answered 2xx: its changes are done and the low-water mark moves on.
    mutating func delivered(_ unit: Unit) {
        busy.subtract(unit.orders)
        answered.formUnion(unit.seqs)
        if let first = unit.seqs.first { held[first] = nil }
        advance()
    }

    /// A request failed: its changes are unsent again, first in line, and a batch is held as it was.
    mutating func failed(_ unit: Unit, holding: Bool) {
        busy.subtract(unit.orders)
        pending.append(contentsOf: unit.changes)
        pending.sort { $0.seq < $1.seq }
        if holding, let first = unit.seqs.first { held[first] = unit.seqs }
    }

    private mutating func advance() {
        while openStart < open.count, answered.contains(open[openStart]) {
            handled = open[openStart]
            answered.remove(handled)
            openStart += 1
        }
        if openStart > 1_024 {
            open.removeFirst(openStart)
            openStart = 0
        }
    }
}
