public import GRDB
public import StoreModel

// The store's records as GRDB rows (GRDB's own habit: the record is a plain value, its database
// mapping an extension beside the engine). StoreModel declares the types and links no database;
// only this engine conforms them to GRDB's protocols.

extension OrderRecord: FetchableRecord, PersistableRecord, TableRecord {
    public static let databaseTableName = "order"

    /// Decodes a row by column position (much cheaper than Codable's by-name decoding). A value of
    /// the wrong type (a database edited by hand) is an error, never a trap.
    public init(row: Row) throws {
        self.init(
            id: try row.decode(atIndex: 0), status: try row.decode(atIndex: 1), storeID: try row.decode(atIndex: 2),
            courierID: try row.decode(atIndex: 3), version: try row.decode(atIndex: 4), updatedAt: try row.decode(atIndex: 5),
            body: try row.decode(atIndex: 6), appliedAt: try row.decode(atIndex: 7))
    }

    /// The columns in ``init(row:)``'s order.
    public static var databaseSelection: [any SQLSelectable] {
        [Column("id"), Column("status"), Column("store_id"), Column("courier_id"), Column("version"),
         Column("updated_at"), Column("body"), Column("applied_at")]
    }

    /// Encodes the record's columns.
    public func encode(to container: inout PersistenceContainer) {
        container["id"] = id
        container["status"] = status
        container["store_id"] = storeID
        container["courier_id"] = courierID
        container["version"] = version
        container["updated_at"] = updatedAt
        container["body"] = body
        container["applied_at"] = appliedAt
    }
}

extension TombstoneRecord: FetchableRecord, PersistableRecord, TableRecord {
    public static let databaseTableName = "tombstone"
}

extension JobRecord: FetchableRecord, PersistableRecord, TableRecord {
    public static let databaseTableName = "job"

    /// Decodes a row by column position. A value of the wrong type is an error, never a trap; an
    /// unknown kind reads as a full sync (the safe repair).
    public init(row: Row) throws {
        self.init(
            id: try row.decode(atIndex: 0), kind: JobKind(rawValue: try row.decode(String.self, atIndex: 1)) ?? .fullSync,
            orderID: try row.decode(atIndex: 2), version: try row.decode(atIndex: 3), payload: try row.decode(atIndex: 4),
            source: try row.decode(atIndex: 5), attempts: try row.decode(atIndex: 6), notBefore: try row.decode(atIndex: 7),
            lastError: try row.decode(atIndex: 8), createdAt: try row.decode(atIndex: 9), status: try row.decode(atIndex: 10),
            storeID: try row.decode(atIndex: 11), courierID: try row.decode(atIndex: 12), updatedAt: try row.decode(atIndex: 13),
            traceContext: try row.decode(atIndex: 14))
    }

    /// The columns in ``init(row:)``'s order.
    public static var databaseSelection: [any SQLSelectable] {
        [Column("id"), Column("kind"), Column("order_id"), Column("version"), Column("payload"), Column("source"),
         Column("attempts"), Column("not_before"), Column("last_error"), Column("created_at"), Column("status"),
         Column("store_id"), Column("courier_id"), Column("updated_at"), Column("trace_context")]
    }

    /// Encodes the record's columns.
    public func encode(to container: inout PersistenceContainer) {
        container["id"] = id
        container["kind"] = kind.rawValue
        container["order_id"] = orderID
        container["version"] = version
        container["payload"] = payload
        container["source"] = source
        container["attempts"] = attempts
        container["not_before"] = notBefore
        container["last_error"] = lastError
        container["created_at"] = createdAt
        container["status"] = status
        container["store_id"] = storeID
        container["courier_id"] = courierID
        container["updated_at"] = updatedAt
        container["trace_context"] = traceContext
    }
}

extension DeadLetterRecord: FetchableRecord, MutablePersistableRecord, TableRecord {
    public static let databaseTableName = "dead_letter"

    public mutating func didInsert(_ inserted: InsertionSuccess) {
        id = inserted.rowID
    }
}
