import Foundation
public import SQLiteStore
public import StoreModel

/// A fresh database file per test (GRDB's advice), removed afterwards.
public final class TemporaryStore {
    /// The directory holding the database.
    public let directory: String
    /// The store.
    public let store: SQLiteOrderStore

    /// Creates a store in a new temporary directory; `now` is its wall clock; the other arguments
    /// as ``SQLiteOrderStore`` says.
    public init(
        now: @escaping @Sendable () -> Double = { 1_000 },
        changesCommitted: @escaping @Sendable (Int64) -> Void = { _ in }, immediateApply: ImmediateApply? = nil,
        grouping: GroupCommit.Grouping? = nil
    ) throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("orderlive-db-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        store = try SQLiteOrderStore(
            path: directory + "/orderlive.sqlite", now: now, changesCommitted: changesCommitted, immediateApply: immediateApply,
            grouping: grouping)
    }

    deinit {
        try? FileManager.default.removeItem(atPath: directory)
    }
}

/// An order record as the upstream would send it (DESIGN §3), for tests.
public func order(_ id: Any, status: String = "assigned", version: Int? = nil, updatedAt: String? = nil,
           extra: [String: Any] = [:]) throws -> OrderRecord {
    var object: [String: Any] = ["id": id, "status": status]
    if let version { object["version"] = version }
    if let updatedAt { object["updated_at"] = updatedAt }
    object.merge(extra) { $1 }
    return try OrderRecord.parse(object, appliedAt: 1)
}
