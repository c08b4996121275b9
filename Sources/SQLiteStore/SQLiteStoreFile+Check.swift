import Foundation
import GRDB
import StoreModel

/// What `orderlive store check` found in a store file.
public struct StoreFileCheck: Sendable, Hashable {
    /// What is wrong, one sentence each; empty when the file is sound.
    public var problems: [String] = []
    /// What it holds, when it could be read: orders, pending jobs, dead letters, the change log.
    public var contents: String = ""
    /// Worth knowing, not wrong (no stream cursor yet).
    public var notes: [String] = []
    /// The migrations the file has, oldest first.
    public var migrations: [String] = []

    /// True when nothing is wrong.
    public var isSound: Bool { problems.isEmpty }
}

extension SQLiteStoreFile {
    /// Checks the store file at `path`: SQLite's `integrity_check`, then the store's own invariants —
    /// a schema this build knows, every journal job's kind known, the change log's seqs without gaps,
    /// every order's version at least 1, every change's body readable — and notes a missing stream cursor. Never throws and never
    /// writes: a file that cannot be opened or read is a problem it reports.
    public static func check(_ path: String) -> StoreFileCheck {
        var check = StoreFileCheck()
        guard FileManager.default.fileExists(atPath: path) else {
            check.problems.append("there is no file at \(path)")
            return check
        }
        do {
            let queue = try DatabaseQueue(path: path, configuration: readOnly)
            defer { try? queue.close() }
            try queue.read { db in try inspect(db, into: &check) }
        } catch let error as DatabaseError {
            check.problems.append(damaged(error, path: path))
        } catch {
            check.problems.append("\(path) cannot be read: \(error)")
        }
        return check
    }

    private static func damaged(_ error: DatabaseError, path: String) -> String {
        switch error.resultCode {
        case .SQLITE_NOTADB: "\(path) is not an SQLite database (or its first page is damaged)"
        case .SQLITE_CORRUPT: "\(path) is damaged: \(error.message ?? "the database disk image is malformed")"
        case .SQLITE_CANTOPEN: "\(path) cannot be opened: no such file, or no permission to read it"
        default: "\(path) cannot be read: \(error.message ?? "\(error.resultCode)")"
        }
    }

    private static func inspect(_ db: Database, into check: inout StoreFileCheck) throws {
        let integrity = try String.fetchAll(db, sql: "PRAGMA integrity_check(20)")
        if integrity != ["ok"] {
            check.problems.append("SQLite's integrity check failed: " + integrity.prefix(5).joined(separator: "; "))
            return
        }
        guard try db.tableExists("grdb_migrations") else {
            check.problems.append("not an orderlive store: it has no schema history (grdb_migrations)")
            return
        }
        check.migrations = try String.fetchAll(db, sql: "SELECT identifier FROM grdb_migrations")
        let known = Set(knownMigrations)
        let newer = check.migrations.filter { !known.contains($0) }
        if !newer.isEmpty {
            check.problems.append("written by a newer orderlive (schema \(newer.joined(separator: ", "))); use that version")
            return
        }
        guard check.migrations.contains("v3-order-change") else {
            // Older stores are migrated at the next start; the invariants below need v3's tables.
            check.notes.append("an older schema (\(check.migrations.last ?? "none")): the next start migrates it")
            return
        }
        try invariants(db, into: &check)
    }

    private static func invariants(_ db: Database, into check: inout StoreFileCheck) throws {
        let kinds = try Row.fetchAll(db, sql: "SELECT kind, COUNT(*) AS n FROM job GROUP BY kind")
        for row in kinds {
            let kind: String = row["kind"]
            if JobKind(rawValue: kind) == nil {
                check.problems.append("the journal holds \(row["n"] as Int) job(s) of unknown kind '\(kind)'")
            }
        }
        if let log = try Row.fetchOne(db, sql: "SELECT COUNT(*) AS n, MIN(seq) AS low, MAX(seq) AS high FROM order_change"),
           let low = log["low"] as Int64?, let high = log["high"] as Int64? {
            let count: Int64 = log["n"]
            let span = high.subtractingReportingOverflow(low)
            if span.overflow || span.partialValue != count - 1 {
                check.problems.append("the change log has gaps: \(count) changes between seq \(low) and \(high)")
            }
        }
        if check.migrations.contains("v9-order-body-change") {
            // A full sync's change of a new order refers to the order's row for its body until the row
            // changes; a change that refers to a row no longer holding it has lost its body.
            let lost = try Int.fetchOne(db, sql: """
                SELECT COUNT(*) FROM order_change c WHERE c.kind = 'upserted' AND c.body IS NULL
                AND NOT EXISTS (SELECT 1 FROM "order" o WHERE o.id = c.order_id AND o.body_change = c.seq)
                """) ?? 0
            if lost > 0 { check.problems.append("\(lost) change(s) in the change log have lost their order's body") }
        }
        let unversioned = try Int.fetchOne(db, sql: #"SELECT COUNT(*) FROM "order" WHERE version IS NOT NULL AND version < 1"#) ?? 0
        if unversioned > 0 { check.problems.append("\(unversioned) order(s) have a version below 1") }
        if try String.fetchOne(db, sql: "SELECT value FROM stream_cursor WHERE id = 'stream'") == nil {
            check.notes.append("no stream cursor yet: the next start reads the event stream from its beginning")
        }
        let orders = try Int.fetchOne(db, sql: #"SELECT COUNT(*) FROM "order""#) ?? 0
        let jobs = try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM job") ?? 0
        let letters = try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM dead_letter") ?? 0
        let changes = try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM order_change") ?? 0
        check.contents = "\(orders) orders, \(jobs) pending jobs, \(letters) dead letters, \(changes) changes"
    }
}
