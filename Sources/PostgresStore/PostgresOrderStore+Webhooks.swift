import Logging
import PostgresNIO
public import StoreModel

/// The outgoing webhooks' endpoints and cursors (DESIGN §13) on PostgreSQL, per account: every agent of
/// the account sees the same endpoints; only the leader delivers.
extension PostgresOrderStore: WebhookOutbox {
    private static let columns = """
        id, url, secret, events, store_ids, enabled, disabled_reason, cursor, attempts, next_attempt_at, last_error,
        last_error_at, last_success_at, created_at, previous_secret, rotated_at, revision, delivery
        """

    public func webhookEndpoints() async throws -> [WebhookEndpoint] {
        try await read { [self] connection in
            let rows = try await connection.query(PostgresQuery(
                unsafeSQL: "SELECT \(Self.columns) FROM orderlive_webhook_endpoint WHERE account = $1 ORDER BY id",
                binds: Self.binds(account)), logger: logger)
            return try await Self.endpoints(rows)
        }
    }

    public func addWebhookEndpoint(_ endpoint: NewWebhookEndpoint) async throws -> WebhookEndpoint {
        let now = self.now()
        let (events, stores) = (WebhookEndpoint.joined(endpoint.events), WebhookEndpoint.joined(endpoint.storeIDs))
        return try await write { [self] connection in
            let head = try await Self.changeHead(account: account, on: connection, logger: logger)
            var bindings = PostgresBindings()
            for text in [account, endpoint.url, endpoint.secret, events, stores] { bindings.append(text) }
            bindings.append(head)
            bindings.append(now)
            bindings.append(endpoint.options.stored)
            let rows = try await connection.query(PostgresQuery(unsafeSQL: """
                INSERT INTO orderlive_webhook_endpoint (account, url, secret, events, store_ids, cursor, created_at, delivery)
                VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING \(Self.columns)
                """, binds: bindings), logger: logger)
            guard let added = try await Self.endpoints(rows).first else { throw PostgresStoreError("the new webhook endpoint was not stored") }
            return added
        }
    }

    public func removeWebhookEndpoint(id: Int64) async throws -> Bool {
        try await changed { [self] connection in
            try await connection.query(
                "DELETE FROM orderlive_webhook_endpoint WHERE account = \(account) AND id = \(id) RETURNING id", logger: logger)
        }
    }

    public func setWebhookEndpoint(id: Int64, enabled: Bool, reason: String?) async throws -> Bool {
        try await changed { [self] connection in
            enabled
                ? try await connection.query("""
                    UPDATE orderlive_webhook_endpoint SET enabled = true, disabled_reason = NULL, attempts = 0, next_attempt_at = 0,
                        revision = revision + 1
                    WHERE account = \(account) AND id = \(id) RETURNING id
                    """, logger: logger)
                : try await connection.query("""
                    UPDATE orderlive_webhook_endpoint SET enabled = false, disabled_reason = \(reason)
                    WHERE account = \(account) AND id = \(id) RETURNING id
                    """, logger: logger)
        }
    }

    public func updateWebhookEndpoint(id: Int64, options: WebhookDeliveryOptions) async throws -> Bool {
        let stored = options.stored
        return try await changed { [self] connection in
            try await connection.query("""
                UPDATE orderlive_webhook_endpoint SET delivery = \(stored) WHERE account = \(account) AND id = \(id) RETURNING id
                """, logger: logger)
        }
    }

    public func rotateWebhookSecret(id: Int64, to secret: String) async throws -> Bool {
        let now = self.now()
        return try await changed { [self] connection in
            try await connection.query("""
                UPDATE orderlive_webhook_endpoint SET previous_secret = secret, secret = \(secret), rotated_at = \(now)
                WHERE account = \(account) AND id = \(id) RETURNING id
                """, logger: logger)
        }
    }

    public func rewindWebhookEndpoint(id: Int64, to seq: Int64) async throws -> Bool {
        try await changed { [self] connection in
            try await connection.query("""
                UPDATE orderlive_webhook_endpoint SET cursor = \(seq), attempts = 0, next_attempt_at = 0, revision = revision + 1
                WHERE account = \(account) AND id = \(id) RETURNING id
                """, logger: logger)
        }
    }

    public func lastChange(before at: Double) async throws -> Int64? {
        try await read { [self] connection in
            var result: Int64?
            for try await (oldest, before) in try await connection.query("""
                SELECT MIN(seq), MAX(seq) FILTER (WHERE at < \(at)) FROM orderlive_order_change WHERE account = \(account)
                """, logger: logger).decode((Int64?, Int64?).self) {
                if let oldest { result = before ?? oldest - 1 }
            }
            return result
        }
    }

    public func recordWebhookProgress(
        id: Int64, from stored: Int64, revision: Int64, through seq: Int64, success: Bool, at: Double
    ) async throws -> Bool {
        try await changed { [self] connection in
            success
                ? try await connection.query("""
                    UPDATE orderlive_webhook_endpoint SET cursor = \(seq), attempts = 0, next_attempt_at = 0, last_success_at = \(at)
                    WHERE account = \(account) AND id = \(id) AND cursor = \(stored) AND revision = \(revision) RETURNING id
                    """, logger: logger)
                : try await connection.query("""
                    UPDATE orderlive_webhook_endpoint SET cursor = \(seq), attempts = 0, next_attempt_at = 0
                    WHERE account = \(account) AND id = \(id) AND cursor = \(stored) AND revision = \(revision) RETURNING id
                    """, logger: logger)
        }
    }

    public func recordWebhookFailure(
        id: Int64, error: String, attempts: Int, retryAt: Double, disable: String?, at: Double
    ) async throws {
        let count = Int64(attempts)
        _ = try await changed { [self] connection in
            try await connection.query("""
                UPDATE orderlive_webhook_endpoint SET attempts = \(count), next_attempt_at = \(retryAt), last_error = \(error),
                    last_error_at = \(at), enabled = CASE WHEN \(disable)::text IS NULL THEN enabled ELSE false END,
                    disabled_reason = COALESCE(\(disable)::text, disabled_reason)
                WHERE account = \(account) AND id = \(id) RETURNING id
                """, logger: logger)
        }
    }

    /// Runs one statement that returns the ids it changed; true when it changed one.
    private func changed(
        _ statement: @escaping @Sendable (PostgresConnection) async throws -> PostgresRowSequence
    ) async throws -> Bool {
        try await write { connection in try await Self.count(try await statement(connection)) > 0 }
    }

    private static func endpoints(_ rows: PostgresRowSequence) async throws -> [WebhookEndpoint] {
        var endpoints: [WebhookEndpoint] = []
        for try await row in rows {
            let value = try row.decode((Int64, String, String, String, String, Bool, String?, Int64, Int64, Double, String?,
                                        Double?, Double?, Double, String?, Double?, Int64, String).self)
            endpoints.append(WebhookEndpoint(
                id: value.0, url: value.1, secret: value.2, events: WebhookEndpoint.split(value.3),
                storeIDs: WebhookEndpoint.split(value.4), enabled: value.5, disabledReason: value.6, cursor: value.7,
                attempts: Int(clamping: value.8), nextAttemptAt: value.9, lastError: value.10, lastErrorAt: value.11,
                lastSuccessAt: value.12, createdAt: value.13, previousSecret: value.14, rotatedAt: value.15, revision: value.16,
                options: WebhookDeliveryOptions.stored(value.17)))
        }
        return endpoints
    }
}
