// StoreModel: the store's vocabulary, apart from its engines (the record is a plain
// value; the database mapping is the engine's extension). Orders and their freshness, tombstones,
// jobs and their kinds, dead letters, the change log's changes and rules, submissions and their
// outcomes, idempotency entries, counts, write health, and the capabilities callers use the store
// through. It links no database: the SQLite engine (SQLiteStore) and the PostgreSQL engine
// (PostgresStore) both build on it, and everything else sees only it.
