import GRDB
public import StoreModel

/// The outgoing webhooks' endpoints and cursors (DESIGN §13) on the SQLite engine.
extension SQLiteOrderStore: WebhookOutbox {
    public func webhookEndpoints() throws -> [WebhookEndpoint] {
        try writer.read { db in try Row.fetchAll(db, sql: "SELECT * FROM webhook_endpoint ORDER BY id").map(Self.endpoint) }
    }

    public func addWebhookEndpoint(_ endpoint: NewWebhookEndpoint) async throws -> WebhookEndpoint {
        let now = self.now()
        return try await recordedWrite { db in
            let head = try Self.changeHead(in: db)
            try db.execute(sql: """
                INSERT INTO webhook_endpoint (url, secret, events, store_ids, cursor, created_at, delivery) VALUES (?, ?, ?, ?, ?, ?, ?)
                """, arguments: [endpoint.url, endpoint.secret, WebhookEndpoint.joined(endpoint.events),
                                 WebhookEndpoint.joined(endpoint.storeIDs), head, now, endpoint.options.stored])
            let id = db.lastInsertedRowID
            guard let row = try Row.fetchOne(db, sql: "SELECT * FROM webhook_endpoint WHERE id = ?", arguments: [id]) else {
                throw DatabaseError(resultCode: .SQLITE_INTERNAL, message: "the new webhook endpoint was not stored")
            }
            return Self.endpoint(row)
        }
    }

    public func removeWebhookEndpoint(id: Int64) async throws -> Bool {
        try await changed("DELETE FROM webhook_endpoint WHERE id = ?", [id])
    }

    public func setWebhookEndpoint(id: Int64, enabled: Bool, reason: String?) async throws -> Bool {
        enabled
            ? try await changed("""
                UPDATE webhook_endpoint SET enabled = 1, disabled_reason = NULL, attempts = 0, next_attempt_at = 0,
                    revision = revision + 1 WHERE id = ?
                """, [id])
            : try await changed("UPDATE webhook_endpoint SET enabled = 0, disabled_reason = ? WHERE id = ?", [reason, id])
    }

    public func updateWebhookEndpoint(id: Int64, options: WebhookDeliveryOptions) async throws -> Bool {
        try await changed("UPDATE webhook_endpoint SET delivery = ? WHERE id = ?", [options.stored, id])
    }

    public func rotateWebhookSecret(id: Int64, to secret: String) async throws -> Bool {
        try await changed("UPDATE webhook_endpoint SET previous_secret = secret, secret = ?, rotated_at = ? WHERE id = ?", [secret, now(), id])
    }

    public func rewindWebhookEndpoint(id: Int64, to seq: Int64) async throws -> Bool {
        try await changed("UPDATE webhook_endpoint SET cursor = ?, attempts = 0, next_attempt_at = 0, revision = revision + 1 WHERE id = ?",
                    [seq, id])
    }

    public func lastChange(before at: Double) throws -> Int64? {
        try writer.read { db in
            guard let oldest = try Int64.fetchOne(db, sql: "SELECT MIN(seq) FROM order_change") else { return nil }
            return try Int64.fetchOne(db, sql: "SELECT MAX(seq) FROM order_change WHERE at < ?", arguments: [at]) ?? oldest - 1
        }
    }

    public func recordWebhookProgress(
        id: Int64, from stored: Int64, revision: Int64, through seq: Int64, success: Bool, at: Double
    ) async throws -> Bool {
        success
            ? try await changed("""
                UPDATE webhook_endpoint SET cursor = ?, attempts = 0, next_attempt_at = 0, last_success_at = ?
                WHERE id = ? AND cursor = ? AND revision = ?
                """, [seq, at, id, stored, revision])
            : try await changed("""
                UPDATE webhook_endpoint SET cursor = ?, attempts = 0, next_attempt_at = 0 WHERE id = ? AND cursor = ? AND revision = ?
                """, [seq, id, stored, revision])
    }

    public func recordWebhookFailure(
        id: Int64, error: String, attempts: Int, retryAt: Double, disable: String?, at: Double
    ) async throws {
        _ = try await changed("""
            UPDATE webhook_endpoint SET attempts = ?, next_attempt_at = ?, last_error = ?, last_error_at = ?,
                enabled = CASE WHEN ? IS NULL THEN enabled ELSE 0 END, disabled_reason = COALESCE(?, disabled_reason)
            WHERE id = ?
            """, [attempts, retryAt, error, at, disable, disable, id])
    }

    private func changed(_ sql: String, _ arguments: StatementArguments) async throws -> Bool {
        try await recordedWrite { db in
            try db.execute(sql: sql, arguments: arguments)
            return db.changesCount > 0
        }
    }

    private static func endpoint(_ row: Row) -> WebhookEndpoint {
        WebhookEndpoint(
            id: row["id"], url: row["url"], secret: row["secret"], events: WebhookEndpoint.split(row["events"]),
            storeIDs: WebhookEndpoint.split(row["store_ids"]), enabled: row["enabled"], disabledReason: row["disabled_reason"],
            cursor: row["cursor"], attempts: row["attempts"], nextAttemptAt: row["next_attempt_at"], lastError: row["last_error"],
            lastErrorAt: row["last_error_at"], lastSuccessAt: row["last_success_at"], createdAt: row["created_at"],
            previousSecret: row["previous_secret"], rotatedAt: row["rotated_at"], revision: row["revision"],
            options: WebhookDeliveryOptions.stored(row["delivery"]))
    }
}
