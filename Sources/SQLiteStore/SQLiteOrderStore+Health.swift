import GRDB
public import StoreModel
import Synchronization
import AsyncSignals

extension SQLiteOrderStore {
    /// The store's write health now.
    public var writeHealth: StoreWriteHealth { health.withLock { $0 } }

    /// Tries a small write and notes its outcome in ``writeHealth`` (DESIGN §10: readiness clears by
    /// itself). It writes 16 KiB and deletes it in one transaction, so it needs room to grow the file
    /// as a full disk denies it, and commits, so a read-only or locked database fails it; it leaves no
    /// row. The agent calls it only while the store is unwritable. It waits on GRDB's writer
    /// without holding a thread of the cooperative pool: a locked database makes it wait the whole
    /// busy timeout, and on two cores two such waits stalled every task (DESIGN §10).
    public func probeWrite() async {
        do {
            try await writer.writeWithoutTransaction { db in
                try db.inCachedTransaction {
                    try db.execute(sql: "INSERT INTO health_probe (filler) VALUES (zeroblob(16384))")
                    try db.execute(sql: "DELETE FROM health_probe")
                }
            }
            noteWrite(failure: nil)
        } catch {
            noteWrite(failure: error)
        }
    }

    /// `updates` in the next transaction of the store's one writer (``GroupCommit``, its control
    /// statements cached), with the outcome noted in ``writeHealth``; returns once it has committed.
    func recordedWrite<T: Sendable>(_ updates: @escaping @Sendable (Database) throws -> T) throws -> T {
        do {
            let result = try groupCommit.write(updates)
            noteWrite(failure: nil)
            return result
        } catch {
            noteWrite(failure: error)
            throw error
        }
    }

    /// The same from async code: the caller's task is suspended until the commit, holding no thread
    /// (a synchronous write that finds the writer busy parks its thread on a semaphore, which on the
    /// cooperative pool can starve the tasks that would let the writer go on).
    func recordedWrite<T: Sendable>(_ updates: @escaping @Sendable (Database) throws -> T) async throws -> T {
        do {
            let result = try await groupCommit.write(updates)
            noteWrite(failure: nil)
            return result
        } catch {
            noteWrite(failure: error)
            throw error
        }
    }

    /// Notes a write's outcome; `failure` nil is a success. Errors that are not storage faults
    /// (a constraint, a bug) do not change the health. Tells the observer of every change.
    func noteWrite(failure: (any Error)?) {
        let reason = failure.flatMap(Self.storageFault)
        if failure != nil, reason == nil { return }
        let changed = health.withLock { $0.record(fault: reason, at: now()) }
        if let changed { healthChanged(changed) }
    }

    /// The condition behind a storage fault, in words an operator can act on; nil for other errors.
    static func storageFault(_ error: any Error) -> String? {
        guard let error = error as? DatabaseError else { return nil }
        switch error.resultCode.primaryResultCode {
        case .SQLITE_FULL: return "the disk is full (or the database reached its size limit)"
        case .SQLITE_READONLY, .SQLITE_PERM: return "the database or its directory is read-only"
        case .SQLITE_IOERR: return "an I/O error on the database file"
        case .SQLITE_BUSY, .SQLITE_LOCKED: return "the database is locked by another process"
        case .SQLITE_CANTOPEN: return "the database file cannot be opened"
        case .SQLITE_CORRUPT, .SQLITE_NOTADB: return "the database file is damaged"
        default: return nil
        }
    }
}
