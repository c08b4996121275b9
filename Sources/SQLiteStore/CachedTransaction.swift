import GRDB
import StoreModel

/// Transactions and savepoints through statements compiled once per connection.
///
/// GRDB's `write` and `inSavepoint` run `BEGIN`, `COMMIT`, `SAVEPOINT` and `RELEASE` as new SQL each
/// time: each is parsed and compiled again, about 10,000 instructions, and a push pays for four of
/// them (its own savepoint and, at low load, a transaction of its own): a sixth of its store-side
/// count (`make bench-instructions`, docs/PERFORMANCE.md). A cached statement is compiled once; GRDB
/// still sees what each one does to the transaction (its authorizer ran when it was compiled).
/// Errors take GRDB's own rollback, which knows when SQLite has already rolled back by itself.
extension Database {
    /// Runs `body` in an immediate transaction (as GRDB's `write` does): committed when `body`
    /// returns, rolled back when it or the commit throws.
    func inCachedTransaction<T>(_ body: () throws -> T) throws -> T {
        try cachedStatement(sql: "BEGIN IMMEDIATE TRANSACTION").execute()
        do {
            let result = try body()
            // An error SQLite answers with a rollback of its own (a full disk, an I/O error) ends the
            // transaction under `body`: committing then would report a success that did not happen.
            guard isInsideTransaction else { throw Self.transactionAborted }
            try cachedStatement(sql: "COMMIT TRANSACTION").execute()
            return result
        } catch {
            // The first error is the one the caller can act on; a failed rollback adds nothing to it.
            do { try rollback() } catch {}
            throw error
        }
    }

    /// Runs `body` in a savepoint of the current transaction: released when `body` returns, rolled
    /// back to (undoing everything `body` wrote) when it throws.
    func inCachedSavepoint<T>(_ body: () throws -> T) throws -> T {
        guard isInsideTransaction else { throw Self.transactionAborted }
        try cachedStatement(sql: "SAVEPOINT part").execute()
        do {
            let result = try body()
            try cachedStatement(sql: "RELEASE SAVEPOINT part").execute()
            return result
        } catch {
            // Rolling back to a savepoint keeps it open: it is released after. When SQLite has rolled
            // the whole transaction back, there is nothing left to undo.
            if isInsideTransaction {
                do {
                    try cachedStatement(sql: "ROLLBACK TRANSACTION TO SAVEPOINT part").execute()
                    try cachedStatement(sql: "RELEASE SAVEPOINT part").execute()
                } catch {
                    // Half a part must never be committed: undo the whole transaction instead, and
                    // every later savepoint and the commit refuse to run without one.
                    do { try rollback() } catch {}
                }
            }
            throw error
        }
    }

    /// What a write is told when SQLite rolled its transaction back under it.
    static let transactionAborted = DatabaseError(
        resultCode: .SQLITE_ABORT, message: "the transaction was rolled back by SQLite after an earlier error")
}
