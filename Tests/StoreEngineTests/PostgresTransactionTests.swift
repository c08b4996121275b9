import Logging
@testable import PostgresStore
import TestHarnesses
import Testing
import PostgresNIO

/// The transaction wrapper every write goes through.
@Suite(.timeLimit(.minutes(5))) struct PostgresTransactionTests {
    /// A failure can reach the client behind a row it already has (a statement's rows are streamed
    /// before the data-modifying parts of it finish), so a caller that stops reading misses it; then
    /// PostgreSQL answers COMMIT with ROLLBACK and no error. The wrapper must say so: the batch of
    /// pushes it held would otherwise be acknowledged and lost.
    @Test func aTransactionThatPostgreSQLRolledBackIsAFailureEvenWhenNoStatementThrew() async throws {
        let server = try await PostgresServer.running()
        let database = try await server.database()
        try await withPostgresStore(server: server, database: database, account: "acme") { store in
            let logger = store.logger
            await #expect(throws: RolledBack.self) {
                try await store.write { connection in
                    try await connection.query("""
                        INSERT INTO orderlive_dedupe_key (account, id, response, accepted_at)
                        VALUES ('acme', 'request:lost', '{}', 1)
                        """, logger: logger)
                    // The failure, never seen by the body.
                    _ = try? await connection.query("SELECT 1 / 0", logger: logger)
                }
            }
            #expect(try await server.psql("SELECT COUNT(*) FROM orderlive_dedupe_key", database: database) == "0")
            // And a transaction that did commit says so.
            try await store.write { connection in
                _ = try await connection.query("""
                    INSERT INTO orderlive_dedupe_key (account, id, response, accepted_at)
                    VALUES ('acme', 'request:kept', '{}', 1)
                    """, logger: logger)
            }
            #expect(try await server.psql("SELECT id FROM orderlive_dedupe_key", database: database) == "request:kept")
        }
    }
}
