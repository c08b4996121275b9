import Foundation
import GRDB
@testable import SQLiteStore
import StoreModel
import Testing

/// The store's transactions and savepoints run through cached statements (issue 16): the same
/// all-or-nothing rules as GRDB's `write` and `inSavepoint`, on a real SQLite database in WAL mode.
@Suite(.timeLimit(.minutes(3))) struct CachedTransactionTests {
    struct Refused: Error {}

    private static func database() throws -> (DatabasePool, String) {
        let directory = NSTemporaryDirectory() + "orderlive-cached-transaction-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let pool = try DatabasePool(path: directory + "/test.sqlite")
        try pool.write { try $0.execute(sql: "CREATE TABLE item (id INTEGER PRIMARY KEY, name TEXT NOT NULL)") }
        return (pool, directory)
    }

    private static func names(_ pool: DatabasePool) throws -> [String] {
        try pool.read { try String.fetchAll($0, sql: "SELECT name FROM item ORDER BY id") }
    }

    @Test func aTransactionCommitsWhenItsBodyReturnsAndRollsBackWhenItThrows() throws {
        let (pool, directory) = try Self.database()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let value = try pool.writeWithoutTransaction { db in
            try db.inCachedTransaction {
                try db.execute(sql: "INSERT INTO item (name) VALUES ('kept')")
                return 42
            }
        }
        #expect(value == 42)
        #expect(throws: Refused.self) {
            try pool.writeWithoutTransaction { db in
                try db.inCachedTransaction {
                    try db.execute(sql: "INSERT INTO item (name) VALUES ('undone')")
                    throw Refused()
                }
            }
        }
        // The cached statements run again, many times, on the same connection.
        for round in 0..<3 {
            try pool.writeWithoutTransaction { db in
                try db.inCachedTransaction { try db.execute(sql: "INSERT INTO item (name) VALUES (?)", arguments: ["round \(round)"]) }
                #expect(!db.isInsideTransaction)
            }
        }
        #expect(try Self.names(pool) == ["kept", "round 0", "round 1", "round 2"])
    }

    @Test func aThrowingSavepointUndoesOnlyItsOwnWrites() throws {
        let (pool, directory) = try Self.database()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let outcomes: [Bool] = try pool.writeWithoutTransaction { db in
            try db.inCachedTransaction {
                try ["first", "second", "third"].map { name in
                    do {
                        try db.inCachedSavepoint {
                            try db.execute(sql: "INSERT INTO item (name) VALUES (?)", arguments: [name + " a"])
                            try db.execute(sql: "INSERT INTO item (name) VALUES (?)", arguments: [name + " b"])
                            if name == "second" { throw Refused() }
                        }
                        return true
                    } catch is Refused {
                        return false
                    }
                }
            }
        }
        #expect(outcomes == [true, false, true])
        #expect(try Self.names(pool) == ["first a", "first b", "third a", "third b"])
    }

    /// SQLite rolls a transaction back by itself after some errors (a full disk, an I/O error): the
    /// commit and every later savepoint must then fail, not report a success that did not happen.
    @Test func aTransactionSQLiteRolledBackIsNeverReportedCommitted() throws {
        let (pool, directory) = try Self.database()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var savepointRefused = false
        do {
            try pool.writeWithoutTransaction { db in
                try db.inCachedTransaction {
                    try db.execute(sql: "INSERT INTO item (name) VALUES ('lost')")
                    try db.execute(sql: "ROLLBACK")  // as SQLite does after SQLITE_FULL
                    do {
                        try db.inCachedSavepoint { try db.execute(sql: "INSERT INTO item (name) VALUES ('never')") }
                    } catch let error as DatabaseError {
                        savepointRefused = error.resultCode == .SQLITE_ABORT
                    }
                }
            }
            Issue.record("a transaction SQLite had rolled back was reported committed")
        } catch let error as DatabaseError {
            #expect(error.resultCode == .SQLITE_ABORT)
        }
        #expect(savepointRefused)
        #expect(try Self.names(pool).isEmpty)
    }
}
