/// Whether the store can write right now (DESIGN §10): a disk that is full, a read-only file
/// system, an I/O error or a lock held past the busy timeout make it unwritable until a write
/// succeeds again. Nothing acknowledged is lost meanwhile: the writes that failed were not
/// acknowledged.
public struct StoreWriteHealth: Sendable, Hashable {
    /// False while writes fail for a storage reason.
    public var writable = true
    /// Why writes fail, when they do (never holds data, only the condition).
    public var reason: String?
    /// Since when, Unix seconds, when they do.
    public var since: Double?
    /// Writes that failed for a storage reason since the store was opened.
    public var failures = 0

    /// A healthy store.
    public init() {}
}

extension StoreWriteHealth {
    /// Records a write's outcome, whichever engine made it: `fault` is the storage condition it
    /// failed for, nil for a success. Returns the new health when it changed (for the observer).
    public mutating func record(fault: String?, at now: @autoclosure () -> Double) -> StoreWriteHealth? {
        if let fault {
            failures += 1
            guard writable || reason != fault else { return nil }
            writable = false
            reason = fault
            since = since ?? now()
            return self
        }
        guard !writable else { return nil }
        writable = true
        reason = nil
        since = nil
        return self
    }
}
