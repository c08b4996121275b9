// OrderStore: the embedded SQLite store (GRDB, WAL) of DESIGN §7 — orders with their full JSON,
// tombstones, the job journal, the stream cursor, push dedupe keys, dead letters and the owning
// user. One owner of the database per process; every invariant is one transaction. It must never
// delete orders because of an error: only an explicit wipe or a change of user clears them.

import CheckedInput
import Foundation
import GRDB

/// How an order's freshness is judged (DESIGN §3): `version` when both sides have one, else
/// `updated_at`, else the last write wins.
public struct OrderFreshness: Sendable, Hashable {
    /// The integer version, when the backend sends one.
    public var version: Int64?
    /// The `updated_at` timestamp as sent (RFC 3339), when present.
    public var updatedAt: String?

    /// Creates a freshness.
    public init(version: Int64?, updatedAt: String?) {
        self.version = version
        self.updatedAt = updatedAt
    }

    /// True when `self` should replace `current`. Equal freshness is not newer, so applying the same
    /// change twice leaves the same state.
    public func isNewer(than current: OrderFreshness) -> Bool {
        if let version, let currentVersion = current.version { return version > currentVersion }
        if let updatedAt, let currentUpdatedAt = current.updatedAt {
            if let mine = Self.instant(updatedAt), let theirs = Self.instant(currentUpdatedAt) { return mine > theirs }
            return updatedAt > currentUpdatedAt
        }
        return true
    }

    /// Unix seconds of an RFC 3339 timestamp, with or without fractional seconds.
    static func instant(_ text: String) -> Double? {
        Checked.rfc3339(text)
    }
}

/// An order as the backend sent it, plus the indexed fields read out of it.
public struct OrderRecord: Sendable, Hashable, FetchableRecord, PersistableRecord {
    public static let databaseTableName = "order"

    /// The id as a string (integer ids compare as their decimal text).
    public var id: String
    /// The status.
    public var status: String
    /// The store, if any.
    public var storeID: String?
    /// The courier, if any.
    public var courierID: String?
    /// The version, if any.
    public var version: Int64?
    /// The `updated_at` text, if any.
    public var updatedAt: String?
    /// The whole JSON object the backend sent, every field kept.
    public var body: String
    /// When it was applied locally, Unix seconds (set by the store when it applies the record).
    public var appliedAt: Double

    /// The freshness of this record.
    public var freshness: OrderFreshness { OrderFreshness(version: version, updatedAt: updatedAt) }

    /// Creates a record.
    public init(
        id: String, status: String, storeID: String?, courierID: String?, version: Int64?, updatedAt: String?,
        body: String, appliedAt: Double
    ) {
        self.id = id
        self.status = status
        self.storeID = storeID
        self.courierID = courierID
        self.version = version
        self.updatedAt = updatedAt
        self.body = body
        self.appliedAt = appliedAt
    }

    /// Decodes a row by column position (much cheaper than Codable's by-name decoding). A value of
    /// the wrong type (a database edited by hand) is an error, never a trap.
    public init(row: Row) throws {
        id = try row.decode(atIndex: 0)
        status = try row.decode(atIndex: 1)
        storeID = try row.decode(atIndex: 2)
        courierID = try row.decode(atIndex: 3)
        version = try row.decode(atIndex: 4)
        updatedAt = try row.decode(atIndex: 5)
        body = try row.decode(atIndex: 6)
        appliedAt = try row.decode(atIndex: 7)
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

/// Why an order object could not be read.
public struct OrderParseError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What is wrong.
    public var message: String

    /// Creates an error.
    public init(_ message: String) {
        self.message = message
    }

    /// The message.
    public var description: String { message }
}

/// A deleted order: stops an older upsert from bringing it back.
public struct TombstoneRecord: Codable, Sendable, Hashable, FetchableRecord, PersistableRecord {
    public static let databaseTableName = "tombstone"

    /// The order id.
    public var id: String
    /// The version the delete carried, if any.
    public var version: Int64?
    /// The `updated_at` of the last known state, if any.
    public var updatedAt: String?
    /// When it was deleted locally, Unix seconds.
    public var deletedAt: Double

    /// Creates a tombstone (an engine reads one).
    public init(id: String, version: Int64?, updatedAt: String?, deletedAt: Double) {
        self.id = id
        self.version = version
        self.updatedAt = updatedAt
        self.deletedAt = deletedAt
    }

    enum CodingKeys: String, CodingKey {
        case id, version
        case updatedAt = "updated_at"
        case deletedAt = "deleted_at"
    }

    /// The freshness of the delete.
    public var freshness: OrderFreshness { OrderFreshness(version: version, updatedAt: updatedAt) }
}

/// What a sync job does (DESIGN §3/§8).
public enum JobKind: String, Sendable, Hashable, CaseIterable {
    /// Upsert the order carried in the job.
    case upsert
    /// Fetch one order (`GET orders/{id}`), then upsert it (404 → delete).
    case fetch
    /// Delete an order, keeping a tombstone.
    case delete
    /// Page through all orders, upsert them, then delete the local ones the backend no longer has.
    case fullSync = "full_sync"
}

/// A job to journal.
public struct NewJob: Sendable, Hashable {
    /// The kind.
    public var kind: JobKind
    /// The order it is about (none for a full sync).
    public var orderID: String?
    /// For a fetch: the lowest version worth applying; for a delete: the delete's version.
    public var version: Int64?
    /// For an upsert: the order record to apply.
    public var order: OrderRecord?
    /// Where it came from, for diagnostics: `stream` or `push`.
    public var source: String

    /// Creates a job.
    public init(kind: JobKind, orderID: String? = nil, version: Int64? = nil, order: OrderRecord? = nil, source: String) {
        self.kind = kind
        self.orderID = orderID
        self.version = version
        self.order = order
        self.source = source
    }
}

/// A journaled job.
public struct JobRecord: Sendable, Hashable, FetchableRecord, PersistableRecord {
    public static let databaseTableName = "job"

    /// The journal position (applied in this order).
    public var id: Int64?
    /// The kind.
    public var kind: JobKind
    /// The order it is about.
    public var orderID: String?
    /// The version bound (see ``NewJob/version``).
    public var version: Int64?
    /// For an upsert, the order record as JSON.
    public var payload: String?
    /// Where it came from.
    public var source: String
    /// Failed attempts so far.
    public var attempts: Int
    /// Not before this Unix time (retry backoff).
    public var notBefore: Double
    /// The last failure, if any.
    public var lastError: String?
    /// When it was journaled, Unix seconds.
    public var createdAt: Double

    /// For an upsert: the order's indexed fields, so applying needs no JSON parsing (migration v2).
    public var status: String?
    /// The order's store.
    public var storeID: String?
    /// The order's courier.
    public var courierID: String?
    /// The order's `updated_at`.
    public var updatedAt: String?

    /// Creates a job record.
    public init(
        id: Int64?, kind: JobKind, orderID: String?, version: Int64?, payload: String?, source: String, attempts: Int,
        notBefore: Double, lastError: String?, createdAt: Double, status: String? = nil, storeID: String? = nil,
        courierID: String? = nil, updatedAt: String? = nil
    ) {
        self.id = id
        self.kind = kind
        self.orderID = orderID
        self.version = version
        self.payload = payload
        self.source = source
        self.attempts = attempts
        self.notBefore = notBefore
        self.lastError = lastError
        self.createdAt = createdAt
        self.status = status
        self.storeID = storeID
        self.courierID = courierID
        self.updatedAt = updatedAt
    }

    /// Decodes a row by column position. A value of the wrong type is an error, never a trap; an
    /// unknown kind reads as a full sync (the safe repair).
    public init(row: Row) throws {
        id = try row.decode(atIndex: 0)
        kind = JobKind(rawValue: try row.decode(String.self, atIndex: 1)) ?? .fullSync
        orderID = try row.decode(atIndex: 2)
        version = try row.decode(atIndex: 3)
        payload = try row.decode(atIndex: 4)
        source = try row.decode(atIndex: 5)
        attempts = try row.decode(atIndex: 6)
        notBefore = try row.decode(atIndex: 7)
        lastError = try row.decode(atIndex: 8)
        createdAt = try row.decode(atIndex: 9)
        status = try row.decode(atIndex: 10)
        storeID = try row.decode(atIndex: 11)
        courierID = try row.decode(atIndex: 12)
        updatedAt = try row.decode(atIndex: 13)
    }

    /// The columns in ``init(row:)``'s order.
    public static var databaseSelection: [any SQLSelectable] {
        [Column("id"), Column("kind"), Column("order_id"), Column("version"), Column("payload"), Column("source"),
         Column("attempts"), Column("not_before"), Column("last_error"), Column("created_at"), Column("status"),
         Column("store_id"), Column("courier_id"), Column("updated_at")]
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
    }

    /// Whether this job can be applied without the network: a delete, or an upsert whose order reads.
    public var isLocal: Bool {
        kind == .delete || (kind == .upsert && payload != nil && orderID != nil && status != nil)
    }

    /// The order an upsert job carries: its body (`payload`) and indexed fields, as journaled.
    public var order: OrderRecord? {
        guard kind == .upsert, let payload, let orderID, let status else { return nil }
        return OrderRecord(
            id: orderID, status: status, storeID: storeID, courierID: courierID, version: version,
            updatedAt: updatedAt, body: payload, appliedAt: createdAt)
    }
}

/// Something that could not be understood or applied, kept with its raw text (DESIGN §3, §8).
public struct DeadLetterRecord: Codable, Sendable, Hashable, FetchableRecord, MutablePersistableRecord {
    public static let databaseTableName = "dead_letter"

    /// Its id.
    public var id: Int64?
    /// `event`, `push` or a job kind.
    public var kind: String
    /// The order it concerns, when known.
    public var orderID: String?
    /// The raw text as received.
    public var raw: String
    /// Why it is here.
    public var reason: String
    /// Attempts made.
    public var attempts: Int
    /// When, Unix seconds.
    public var createdAt: Double

    enum CodingKeys: String, CodingKey {
        case id, kind, raw, reason, attempts
        case orderID = "order_id"
        case createdAt = "created_at"
    }

    /// Creates a dead letter.
    public init(kind: String, orderID: String?, raw: String, reason: String, attempts: Int, createdAt: Double) {
        self.kind = kind
        self.orderID = orderID
        self.raw = raw
        self.reason = reason
        self.attempts = attempts
        self.createdAt = createdAt
    }

    public mutating func didInsert(_ inserted: InsertionSuccess) {
        id = inserted.rowID
    }
}
