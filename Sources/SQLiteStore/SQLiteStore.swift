// SQLiteStore: the order store on one SQLite file (GRDB, WAL; DESIGN §7), the first engine behind
// the store's capabilities (`JobJournal`, `JobApplier`, `OrderReader`, `ChangeFeedSource`,
// `WebhookOutbox`). The process's one owner of `orderlive.sqlite` (`SQLiteOrderStore`) writes every
// transaction through one writer (`GroupCommit`); other processes may read the file at any time,
// and `SQLiteStoreFile` backs it up and checks it without migrating it. The only module that names
// GRDB; `PostgresStore` is its sibling.

/// How durable each commit is.
public enum StoreDurability: String, Sendable, Hashable, CaseIterable {
    /// `synchronous=NORMAL` in WAL mode: survives a process crash.
    case normal
    /// `synchronous=FULL`: also survives a power loss.
    case full
}
