/// Applying whole-order jobs in the transaction that accepts them, when nothing is ahead of them in
/// the account's journal: one write per push or stream event instead of two (journaled, then applied
/// and removed by the executor). Each engine decides when that is safe and says why beside its code:
/// SQLite (one connection writes) whenever its journal is empty; PostgreSQL only on the fenced
/// leader, under the journal lock, with an empty journal and the leader's epoch still its own.
/// The first job that must wait (a fetch, a full sync) is journaled, and every job after it too, so
/// journal order always holds.
public struct ImmediateApply: Sendable {
    /// Hears, after the commit, how many jobs of a kind were applied at once (for metrics: they are
    /// sync jobs completed, like the executor's).
    public var applied: @Sendable (JobKind, Int) -> Void

    /// Applies whole-order jobs at once while the journal is empty; `applied` hears how many.
    public init(applied: @escaping @Sendable (JobKind, Int) -> Void = { _, _ in }) {
        self.applied = applied
    }
}
