#if canImport(Glibc)
import Glibc
#endif
import GRDB
import StoreModel
import GRDBSQLite

/// One of the store's per-event statements (the order lookup, the upsert, the change log and journal
/// inserts), bound and stepped through SQLite's C API rather than through GRDB's
/// `StatementArguments` and `Row`. The statement itself is GRDB's, compiled once per connection and
/// kept in its statement cache. Stream → SQLite spent about a fifth of its time building argument
/// arrays of existentials, binding them recursively and building a `Row` per lookup.
///
/// Thread rule: like any GRDB `Statement`, a value is used only inside the database access closure
/// that made it, on GRDB's serialized queue, and never kept beyond it. It skips GRDB's per-statement
/// bookkeeping (transaction observers, region tracking), which the store does not use: it registers
/// no observers, and these statements are plain reads and writes inside a transaction GRDB opened
/// and closes. Each use resets the statement and clears its bindings when it ends, so a statement is
/// never left mid-step and a failed one is reusable (statements are prepared with `_v2`/`_v3`).
struct DirectStatement {
    private let statement: Statement
    private let connection: SQLiteConnection?

    /// The cached statement for `sql` (compiled the first time on this connection).
    init(_ sql: String, in db: Database) throws {
        statement = try db.cachedStatement(sql: sql)
        connection = db.sqliteConnection
    }

    /// The statement `key` of a write transaction's ``TransactionStatements``.
    init(_ key: TransactionStatements.Key, of statements: TransactionStatements, in db: Database) throws {
        statement = try statements.statement(key, in: db)
        connection = db.sqliteConnection
    }

    /// Binds the parameters with `bind`, in order, and runs the statement to its end.
    func execute(_ bind: (inout Bindings) throws -> Void) throws {
        var bindings = try prepare(bind)
        defer { finish(&bindings) }
        while true {
            let code = sqlite3_step(statement.sqliteStatement)
            if code == SQLITE_DONE { return }
            if code != SQLITE_ROW { throw failure(code) }
        }
    }

    /// How many rows the connection's last completed `INSERT`, `UPDATE` or `DELETE` changed (SQLite's
    /// `sqlite3_changes`; GRDB's `changesCount` checks the queue first, a measurable cost per order).
    static func changesCount(of db: Database) -> Int {
        Int(sqlite3_changes(db.sqliteConnection))
    }

    /// The first column of the first row of a query without parameters (`COUNT(*)`, `MAX(seq)`) as
    /// an integer; nil when there is no row or the value is NULL.
    func integer() throws -> Int64? {
        try first({ _ in }, read: { try $0.integer(0) }) ?? nil
    }

    /// Binds the parameters with `bind`, steps once and reads the first row with `read`; nil when
    /// there is none.
    func first<T>(_ bind: (inout Bindings) throws -> Void, read: (Columns) throws -> T) throws -> T? {
        var bindings = try prepare(bind)
        defer { finish(&bindings) }
        let code = sqlite3_step(statement.sqliteStatement)
        if code == SQLITE_DONE { return nil }
        guard code == SQLITE_ROW else { throw failure(code) }
        return try read(Columns(handle: statement.sqliteStatement, statement: statement))
    }

    /// Binds the parameters with `bind` and reads every row with `read`, in order.
    func forEach(_ bind: (inout Bindings) throws -> Void, read: (Columns) throws -> Void) throws {
        var bindings = try prepare(bind)
        defer { finish(&bindings) }
        let columns = Columns(handle: statement.sqliteStatement, statement: statement)
        while true {
            let code = sqlite3_step(statement.sqliteStatement)
            if code == SQLITE_DONE { return }
            guard code == SQLITE_ROW else { throw failure(code) }
            try read(columns)
        }
    }

    private func prepare(_ bind: (inout Bindings) throws -> Void) throws -> Bindings {
        let handle = statement.sqliteStatement
        sqlite3_reset(handle)
        var bindings = Bindings(handle: handle, statement: self)
        do {
            try bind(&bindings)
        } catch {
            finish(&bindings)
            throw error
        }
        // Every parameter bound: a missing one would silently be NULL.
        guard bindings.count == sqlite3_bind_parameter_count(handle) else {
            finish(&bindings)
            throw DatabaseError(
                resultCode: .SQLITE_MISUSE,
                message: "\(bindings.count) values bound for \(sqlite3_bind_parameter_count(handle)) parameters",
                sql: statement.sql)
        }
        return bindings
    }

    /// Resets the statement and unbinds its parameters, then frees the texts they pointed at: in that
    /// order, so SQLite never holds a pointer to freed memory.
    private func finish(_ bindings: inout Bindings) {
        sqlite3_reset(statement.sqliteStatement)
        sqlite3_clear_bindings(statement.sqliteStatement)
        bindings.texts.release()
    }

    /// The error for a result code, with SQLite's message (statements here carry no secrets, and
    /// the error carries no bound values).
    fileprivate func failure(_ code: CInt) -> DatabaseError {
        let message = connection.flatMap { sqlite3_errmsg($0) }.map { String(cString: $0) }
        return DatabaseError(resultCode: ResultCode(rawValue: code), message: message, sql: statement.sql)
    }
}

/// The parameters of one execution, bound in order from the first.
struct Bindings {
    fileprivate let handle: SQLiteStatement
    fileprivate let statement: DirectStatement
    /// How many have been bound.
    fileprivate(set) var count: CInt = 0
    /// Copies of the bound texts, which SQLite reads in place until the statement is reset.
    fileprivate var texts = TextArena()

    /// SQLite copies the text before the call returns (for the empty text, bound from a literal).
    private static let transient = unsafeBitCast(OpaquePointer(bitPattern: -1), to: sqlite3_destructor_type.self)

    /// Binds text, or NULL. The text ends at its first NUL, as GRDB binds and reads text everywhere
    /// else in the store, so a value written here reads back the same through either.
    ///
    /// The bytes are copied once into ``TextArena`` and bound there as static text: bound as transient,
    /// SQLite made its own copy of every value (an allocation, a copy and a free per text, about 1,000
    /// instructions with the unbinding, 13 texts an order event: a seventh of its store work).
    mutating func bind(_ value: String?) throws {
        count += 1
        guard var value else { return try check(sqlite3_bind_null(handle, count)) }
        let index = count
        let code = value.withUTF8 { bytes -> CInt in
            guard let base = bytes.baseAddress, !bytes.isEmpty else {
                // An empty string is text, not NULL (a nil pointer would bind NULL); SQLite copies it.
                return sqlite3_bind_text(handle, index, "", 0, Self.transient)
            }
            let length = memchr(base, 0, bytes.count).map { base.distance(to: $0.assumingMemoryBound(to: UInt8.self)) } ?? bytes.count
            guard let checked = CInt(exactly: length) else { return SQLITE_TOOBIG }
            guard let copy = texts.copy(UnsafeBufferPointer(start: base, count: length)) else {
                return sqlite3_bind_text(handle, index, "", 0, Self.transient)
            }
            return sqlite3_bind_text(handle, index, copy, checked, nil)
        }
        try check(code)
    }

    /// Binds an integer, or NULL.
    mutating func bind(_ value: Int64?) throws {
        count += 1
        guard let value else { return try check(sqlite3_bind_null(handle, count)) }
        try check(sqlite3_bind_int64(handle, count, value))
    }

    /// Binds a real.
    mutating func bind(_ value: Double) throws {
        count += 1
        try check(sqlite3_bind_double(handle, count, value))
    }

    private func check(_ code: CInt) throws {
        guard code == SQLITE_OK else { throw statement.failure(code) }
    }
}

/// The texts bound to one execution of a statement, copied into blocks that never move while the
/// statement may read them: one block of 4 KiB holds an order event's texts, a larger text gets a
/// block of its own. ``DirectStatement`` frees them after it has reset the statement and unbound
/// its parameters. Used on one thread, inside one call (the statement's).
struct TextArena {
    private static let blockSize = 4_096
    /// The block being filled, and how much of it is used.
    private var current: UnsafeMutableRawBufferPointer?
    private var used = 0
    /// Blocks filled before it (an empty array allocates nothing).
    private var filled: [UnsafeMutableRawBufferPointer] = []

    /// A copy of `bytes` that stays where it is until ``release()``; nil for no bytes.
    mutating func copy(_ bytes: UnsafeBufferPointer<UInt8>) -> UnsafePointer<CChar>? {
        var block: UnsafeMutableRawBufferPointer
        if let current, current.count - used >= bytes.count {
            block = current
        } else {
            if let current { filled.append(current) }
            block = .allocate(byteCount: max(Self.blockSize, bytes.count), alignment: 1)
            current = block
            used = 0
        }
        let target = UnsafeMutableRawBufferPointer(rebasing: block[used..<(used + bytes.count)])
        target.copyMemory(from: UnsafeRawBufferPointer(bytes))
        used += bytes.count
        return target.baseAddress.map { UnsafePointer($0.assumingMemoryBound(to: CChar.self)) }
    }

    /// Frees every block.
    mutating func release() {
        current?.deallocate()
        for block in filled { block.deallocate() }
        current = nil
        filled = []
        used = 0
    }
}

/// The current row's columns, read by position. A value of another type than the column should hold
/// (a database edited by hand) is an error, never a trap, as GRDB's decoding would say.
struct Columns {
    fileprivate let handle: SQLiteStatement
    /// For errors only: GRDB's `Statement.sql` trims the text on every call (it cost a quarter of the
    /// stream → SQLite time when read per row).
    fileprivate let statement: Statement

    /// Text, or nil for NULL.
    func text(_ index: CInt) throws -> String? {
        switch sqlite3_column_type(handle, index) {
        case SQLITE_NULL:
            return nil
        case SQLITE_TEXT:
            // Up to the first NUL, as GRDB reads it.
            guard let text = sqlite3_column_text(handle, index) else { return nil }
            return String(cString: text)
        default:
            throw mismatch(index, "text")
        }
    }

    /// An integer, or nil for NULL; a real is accepted when it is a whole number in range.
    func integer(_ index: CInt) throws -> Int64? {
        switch sqlite3_column_type(handle, index) {
        case SQLITE_NULL:
            return nil
        case SQLITE_INTEGER:
            return sqlite3_column_int64(handle, index)
        case SQLITE_FLOAT:
            guard let exact = Int64(exactly: sqlite3_column_double(handle, index)) else { throw mismatch(index, "an integer") }
            return exact
        default:
            throw mismatch(index, "an integer")
        }
    }

    /// Text that may not be NULL.
    func requiredText(_ index: CInt) throws -> String {
        guard let text = try text(index) else { throw mismatch(index, "text") }
        return text
    }

    private func mismatch(_ index: CInt, _ expected: String) -> DatabaseError {
        let name = sqlite3_column_name(handle, index).map { String(cString: $0) } ?? "\(index)"
        return DatabaseError(
            resultCode: .SQLITE_MISMATCH, message: "column \(name) does not hold \(expected) (edited by hand?)",
            sql: statement.sql)
    }
}

/// The per-order statements of one write transaction (the upsert, the change log's insert, the
/// order's row and tombstone), found by their index after their first use. GRDB's statement cache finds a
/// statement by hashing its SQL text, about 1,700 instructions for these, three times per order; a
/// push batch or a stream batch of N orders now pays that once, not N times.
///
/// Thread rule (why `@unchecked Sendable` is safe): like the statements it holds, it is used only
/// inside the database access closure of the transaction that made it, on GRDB's serialized queue.
/// It leaves that closure only inside the transaction's ``JobIntake``, whose counts are read after
/// the commit; nothing calls it there, so no two threads ever touch it.
final class TransactionStatements: @unchecked Sendable {
    /// The statements, with their SQL; the raw value is the statement's slot.
    enum Key: Int, CaseIterable {
        case upsert, insertNew, insertNewBatch, materialize, changeInsert, changeInsertBatch, orderRow, tombstoneRow

        var sql: String {
            switch self {
            case .upsert: SQLiteOrderStore.upsertSQL
            case .insertNew: SQLiteOrderStore.insertNewSQL
            case .insertNewBatch: SQLiteOrderStore.insertNewBatchSQL
            case .changeInsertBatch: SQLiteOrderStore.changeInsertBatchSQL
            case .materialize: SQLiteOrderStore.materializeSQL
            case .changeInsert: ChangeAppender.insertSQL
            case .orderRow: PageLookup.orderRowSQL
            case .tombstoneRow: PageLookup.tombstoneRowSQL
            }
        }
    }

    private var slots = [Statement?](repeating: nil, count: Key.allCases.count)

    /// The statement `key`, from GRDB's cache the first time in this transaction.
    func statement(_ key: Key, in db: Database) throws -> Statement {
        if let statement = slots[key.rawValue] { return statement }
        let statement = try db.cachedStatement(sql: key.sql)
        slots[key.rawValue] = statement
        return statement
    }
}
