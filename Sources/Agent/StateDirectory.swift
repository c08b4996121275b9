import Foundation
#if canImport(Glibc)
import Glibc
#endif
public import SQLiteStore
public import StoreModel

/// The state directory (`store.state_dir`, DESIGN §7) and the files orderlive keeps in it: the order
/// database with its WAL files and the stream-status file (the credentials file is the credential
/// store's own). The one place that knows their names.
public struct StateDirectory: Sendable, Hashable {
    /// The directory's path.
    public let path: String

    /// The state directory at `path`.
    public init(_ path: String) {
        self.path = path
    }

    /// The order database.
    public var databasePath: String { path + "/orderlive.sqlite" }

    /// The stream-status file the running agent keeps up to date for `status`.
    public var streamStatusPath: String { path + "/stream-status.json" }

    /// The file holding the agent's `service.instance.id` for telemetry.
    public var instanceIDPath: String { path + "/instance-id" }

    /// This state directory's identity in exported telemetry (`service.instance.id`, DESIGN §14): a
    /// random UUID made on first use and kept in `instance-id`, so it outlives restarts and host
    /// renames, and a copied directory keeps it. Nil when it can be neither read nor written; the
    /// telemetry then goes without one.
    public func instanceID() -> String? {
        if let data = FileManager.default.contents(atPath: instanceIDPath), data.count <= 64,
           let id = UUID(uuidString: String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)) {
            return id.uuidString.lowercased()
        }
        let id = UUID().uuidString.lowercased()
        do {
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            try Data((id + "\n").utf8).write(to: URL(fileURLWithPath: instanceIDPath), options: .atomic)
        } catch {
            return nil
        }
        return id
    }

    /// Opens the order database, creating it when there is none; `busyTimeout` (seconds) is how long
    /// a write waits for another process's lock; `healthChanged` hears when writes start failing for
    /// a storage reason and when they succeed again; `immediateApply` as ``SQLiteOrderStore`` says (the
    /// running agent's store sets it).
    public func openStore(
        durability: StoreDurability = .normal, busyTimeout: Double = 5, healthChanged: @escaping @Sendable (StoreWriteHealth) -> Void = { _ in },
        changesCommitted: @escaping @Sendable (Int64) -> Void = { _ in }, immediateApply: ImmediateApply? = nil
    ) throws -> SQLiteOrderStore {
        try SQLiteOrderStore(
            path: databasePath, durability: durability, busyTimeout: busyTimeout, healthChanged: healthChanged, changesCommitted: changesCommitted,
            immediateApply: immediateApply)
    }

    /// Opens the order database when it exists; never creates one (with none, there are no orders yet).
    public func openExistingStore() throws -> SQLiteOrderStore? {
        guard FileManager.default.fileExists(atPath: databasePath) else { return nil }
        return try SQLiteOrderStore(path: databasePath)
    }

    /// The store part of `status`; nil when there is no database yet.
    public func storeStatus() async throws -> StoreStatus? {
        guard let store = try openExistingStore() else { return nil }
        var status = try await StoreStatus(store)
        status.writeProblem = status.writeProblem ?? writeProblem()
        return status
    }

    /// What stops writes to the state directory now, seen from outside the agent (for `status` in
    /// another process): a read-only file system or directory, or no free space. Nil when none is seen.
    public func writeProblem() -> String? {
        var stats = statvfs()
        guard statvfs(path, &stats) == 0 else { return nil }
        if stats.f_flag & UInt(ST_RDONLY) != 0 { return "the database or its directory is read-only" }
        if access(path, W_OK) != 0 { return "the database or its directory is read-only" }
        let free = UInt64(stats.f_bavail).multipliedReportingOverflow(by: UInt64(stats.f_frsize))
        if !free.overflow, free.partialValue < 64 * 1024 { return "the disk is full" }
        return nil
    }

    /// Deletes the order database and its WAL files (`logout --wipe`); returns the files removed.
    public func wipeOrders() throws -> [String] {
        var removed: [String] = []
        for suffix in ["", "-wal", "-shm"] {
            let file = databasePath + suffix
            if FileManager.default.fileExists(atPath: file) {
                try FileManager.default.removeItem(atPath: file)
                removed.append(file)
            }
        }
        return removed
    }
}

/// The store part of `status` (stream cursor, counts, owner).
public struct StoreStatus: Sendable, Hashable {
    /// The stored stream cursor.
    public var cursor: String
    /// Counts.
    public var counts: StoreCounts
    /// The user the data belongs to.
    public var owner: String?
    /// Why the store cannot be written now, if it cannot (full disk, read-only, I/O error, locked).
    public var writeProblem: String?

    /// The outgoing webhook endpoints.
    public var webhooks: [Webhook] = []

    /// One outgoing webhook endpoint as `status` shows it (never its secret).
    public struct Webhook: Sendable, Hashable {
        public var id: Int64
        public var enabled: Bool
        /// Why it is disabled.
        public var reason: String?
        /// Changes it has not had yet.
        public var backlog: Int64
        public var lastError: String?
    }

    /// Reads it from a store.
    public init(_ store: any OrderReader) async throws {
        try await self.init(store, outbox: await Self.outbox(of: store))
    }

    /// Reads it from a store whose webhook endpoints and change head (nil: none, or unreadable) the
    /// caller has read already.
    init(_ store: any OrderReader, outbox: (endpoints: [WebhookEndpoint], head: Int64)?) async throws {
        cursor = try await store.streamCursor()
        counts = try await store.counts()
        owner = try await store.owner()
        writeProblem = store.writeHealth.reason
        if let (endpoints, head) = outbox {
            webhooks = endpoints.map {
                Webhook(id: $0.id, enabled: $0.enabled, reason: $0.disabledReason, backlog: max(0, head - $0.cursor), lastError: $0.lastError)
            }
        }
    }

    /// The store's webhook endpoints and its change head; nil when it has no endpoints or they
    /// cannot be read.
    static func outbox(of store: any OrderReader) async -> (endpoints: [WebhookEndpoint], head: Int64)? {
        guard let outbox = store as? any WebhookOutbox & ChangeFeedSource, let endpoints = try? await outbox.webhookEndpoints(),
              !endpoints.isEmpty, let head = try? await outbox.changeHead() else { return nil }
        return (endpoints, head)
    }
}
