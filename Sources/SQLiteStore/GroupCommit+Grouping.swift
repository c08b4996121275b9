extension GroupCommit {
    /// When the store's writer commits several callers' writes in one transaction.
    ///
    /// Grouping saves commits, and what a commit costs is its sync: with `durability: full` every
    /// commit syncs the write-ahead log; with `normal` none does (only checkpoints sync). Measured
    /// on this project's 2-core machine (docs/PERFORMANCE.md, "One writer for every write"): where a
    /// sync took 2 ms (an SD card, an eMMC module, a network disk), grouping the writes of the push
    /// journal, the stream and the executor made `full` 20-57 % faster; where commits do not sync it
    /// made the agent up to 16 % slower, and with a cheap sync −12 to +6 %, since each caller then
    /// waits for the others' writes too and the callers prepare their next writes all at once while
    /// the writer stands idle. So `orderlive run` groups with `durability: full` and not with `normal`
    /// (``standard(for:)``).
    public enum Grouping: Sendable, Hashable {
        /// One caller's writes per transaction.
        case never
        /// Everything pending when the writer wakes, up to `limit` callers' writes.
        case always(limit: Int)

        /// What `orderlive run` uses: up to 64 callers' writes a transaction where each commit syncs
        /// (`full`), one where none does (`normal`).
        public static func standard(for durability: StoreDurability) -> Grouping {
            switch durability {
            case .full: .always(limit: 64)
            case .normal: .never
            }
        }

        /// How many callers' writes one transaction may take.
        var limit: Int {
            switch self {
            case .never: 1
            case .always(let limit): max(1, limit)
            }
        }
    }
}
