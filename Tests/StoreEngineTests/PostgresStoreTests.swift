import Foundation
import Logging
import SQLiteStore
import StoreModel
import PostgresStore
import TestHarnesses
import TestKit
import Testing

/// What only the PostgreSQL engine has: accounts sharing one database, migrations under a lock,
/// the fence, and the URL rules of `store.postgres_url`.
@Suite(.timeLimit(.minutes(5))) struct PostgresStoreTests {
    @Test func twoAccountsInOneDatabaseNeverSeeEachOthersOrdersJournalCursorOrKeys() async throws {
        let server = try await PostgresServer.running()
        let database = try await server.database()
        try await withPostgresStore(server: server, database: database, account: "north") { north in
            try await withPostgresStore(server: server, database: database, account: "south") { south in
                try await north.claim(for: "alice")
                try await south.claim(for: "bob")
                try await north.applyUpsert(try order(1, status: "created", version: 1), completing: nil)
                try await south.applyUpsert(try order(1, status: "delivered", version: 9), completing: nil)
                try await north.journal([NewJob(kind: .fetch, orderID: "2", source: "stream")], cursor: "n-7", deadLetters: [])
                let push = IdempotentSubmission(requestKey: "msg_1", parts: [], response: "{}")
                let policy = SubmissionPolicy(dedupeSince: 0, highWaterJobs: 100)
                #expect(await north.accept([push], policy: policy) == [.accepted(jobs: 0, duplicateParts: 0)])
                #expect(await south.accept([push], policy: policy) == [.accepted(jobs: 0, duplicateParts: 0)],
                        "a key accepted in one account is new in another")
                #expect(try await north.order(id: "1")?.status == "created")
                #expect(try await south.order(id: "1")?.status == "delivered")
                #expect(try await south.streamCursor() == "")
                #expect(try await south.counts().journalDepth == 0)
                #expect(try await north.headJobs(limit: 10).count == 1)
                // A user switch in one account clears only that account.
                #expect(try await south.claim(for: "carol") == true)
                #expect(try await north.orders(status: nil).map(\.id) == ["1"])
                #expect(try await north.streamCursor() == "n-7")
                #expect(try await north.owner() == "alice")
                #expect(try await south.orders(status: nil).isEmpty)
                #expect(try await north.changeHead() != (try await south.changeHead()))
            }
        }
    }

    @Test func agentsStartingAtOnceMigrateOnceAndAgainFindNothingToDo() async throws {
        let server = try await PostgresServer.running()
        let database = try await server.database()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for index in 0..<4 {
                group.addTask {
                    try await withPostgresStore(server: server, database: database, account: "a\(index)") { store in
                        let versions = try await store.appliedMigrations()
                        #expect(versions == ["1", "2", "3", "4", "5", "6", "7", "8", "9"])
                    }
                }
            }
            try await group.waitForAll()
        }
        #expect(try await server.psql("SELECT COUNT(*) FROM orderlive_migration", database: database) == "9")
        #expect(try await server.psql("SELECT COUNT(*) FROM orderlive_change_log", database: database) == "4")
    }

    @Test func aDatabaseOfTheFirstReleasedSchemaMigratesForwardKeepingEveryRow() async throws {
        let server = try await PostgresServer.running()
        let database = try await server.database()
        let fixture = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("Fixtures/postgres-schema-1.sql").path
        try await server.psql(file: fixture, database: database)
        #expect(try await server.psql("SELECT string_agg(version, ',') FROM orderlive_migration", database: database) == "1")
        let headBefore = Int64(try await server.psql(
            "SELECT MAX(seq) FROM orderlive_order_change WHERE account = 'acme'", database: database))
        try await withPostgresStore(server: server, database: database, account: "acme", now: { 1_800_000_000 }) { store in
            #expect(try await store.appliedMigrations() == ["1", "2", "3", "4", "5", "6", "7", "8", "9"])
            // Every row of the first schema reads back through today's store.
            #expect(try await store.owner() == "alice")
            #expect(try await store.streamCursor() == "evt-41")
            #expect(try await store.orders(status: nil).map(\.id) == ["1", "2"])
            #expect(try await store.order(id: "2")?.body == #"{"id":2,"status":"assigned","version":3}"#)
            #expect(try await store.tombstone(id: "3")?.version == 4)
            #expect(try await store.applyUpsert(try order(3, status: "created", version: 3), completing: nil) == .stale,
                    "the tombstone still stops an older upsert")
            #expect(try await store.deadLetters().map(\.reason) == ["the event's data is not JSON"])
            let again = await store.accept(
                [IdempotentSubmission(requestKey: "msg_v1", parts: [], response: "{}")],
                policy: SubmissionPolicy(dedupeSince: 0, highWaterJobs: 100))
            #expect(again == [.duplicate(response: #"{"counts":1}"#)], "a push accepted before the migration is a duplicate")
            let pending = try #require(try await store.headJobs(limit: 10).first)
            #expect(pending.kind == .fetch && pending.orderID == "4")
            // The change log goes on from where it was, and a consumer's id from before resumes.
            let head = try #require(headBefore)
            #expect(try await store.changeHead() == head)
            #expect(try await store.applyUpsert(try order(4, version: 1), completing: pending.id) == .applied)
            #expect(try await store.changeHead() == head + 1)
            guard case .changes(let missed) = try await store.changes(after: head, limit: 10) else {
                Issue.record("a consumer's id from before the migration was told to reset")
                return
            }
            #expect(missed.map(\.orderID) == ["4"])
            // Migration 5 took the store and courier indexes away; filtered reads answer as before.
            #expect(try await server.psql(
                "SELECT string_agg(indexname, ',' ORDER BY indexname) FROM pg_indexes WHERE tablename = 'orderlive_order'",
                database: database) == "orderlive_order_pkey,orderlive_order_status")
            let byStore = try await store.snapshot(matching: OrderFilter(storeIDs: ["1"]))
            let stored = try await store.orders(status: nil).filter { $0.storeID == "1" }
            #expect(byStore.orders.map(\.id) == stored.map(\.id))
            // The second schema's record: the pending job was applied (by no leader yet).
            #expect(try await server.psql(
                "SELECT job_id || ':' || COALESCE(epoch::text, 'none') FROM orderlive_job_applied", database: database)
                == "\(pending.id ?? -1):none")
        }
    }

    @Test func eachAppliedJobIsRecordedWithTheEpochItWasAppliedUnder() async throws {
        let server = try await PostgresServer.running()
        let database = try await server.database()
        try await withPostgresStore(server: server, database: database, account: "acme") { store in
            _ = try await server.psql(
                "INSERT INTO orderlive_leadership (account, epoch, leader, since) VALUES ('acme', 7, 'a:1', 0)",
                database: database)
            store.fence(epoch: 7)
            try await store.journal([
                NewJob(kind: .upsert, orderID: "1", order: try order(1, version: 1), source: "push"),
                NewJob(kind: .upsert, orderID: "2", order: try order(2, version: 1), source: "push"),
                NewJob(kind: .delete, orderID: "1", version: 2, source: "push"),
            ], cursor: nil, deadLetters: [])
            let jobs = try await store.headJobs(limit: 10)
            #expect(try await store.applyInOneTransaction(Array(jobs.prefix(2))) == 2)
            _ = try await server.psql("UPDATE orderlive_leadership SET epoch = 8, leader = 'b:2' WHERE account = 'acme'",
                                      database: database)
            await #expect(throws: FencedOut.self) { try await store.applyInOneTransaction([jobs[2]]) }
            store.fence(epoch: 8)
            #expect(try await store.applyDelete(orderID: "1", version: 2, completing: jobs[2].id) == .deleted)
            let record = try await server.psql(
                "SELECT string_agg(job_id || ':' || epoch, ',' ORDER BY job_id) FROM orderlive_job_applied", database: database)
            let ids = jobs.compactMap(\.id)
            #expect(record == "\(ids[0]):7,\(ids[1]):7,\(ids[2]):8", "the refused apply left no record")
            // Kept as long as the change log: pruning to one keeps the newest job's record.
            try await store.pruneChanges(keeping: 0, batch: 100)
            #expect(try await server.psql("SELECT string_agg(job_id::text, ',') FROM orderlive_job_applied", database: database)
                    == "\(ids[2])")
        }
    }

    @Test func aBatchWithOneSubmissionTheDatabaseRefusesFailsThatOneAndAcceptsTheRest() async throws {
        let server = try await PostgresServer.running()
        let database = try await server.database()
        try await withPostgresStore(server: server, database: database, account: "acme") { store in
            func push(_ key: String, _ id: Int, body: String? = nil) throws -> IdempotentSubmission {
                var record = try order(id, version: 1)
                if let body { record.body = body }
                return IdempotentSubmission(requestKey: key, parts: [
                    .init(key: "n-\(key)", jobs: [NewJob(kind: .upsert, order: record, source: "push")]),
                ], response: "{}")
            }
            // PostgreSQL text cannot hold NUL: the batch's one-statement write fails, and the batch
            // is taken again one submission at a time.
            let outcomes = await store.accept([
                try push("a", 1), try push("b", 2, body: "{\u{0}}"), try push("c", 3),
            ], policy: SubmissionPolicy(dedupeSince: 0, highWaterJobs: 100))
            #expect(outcomes.count == 3)
            #expect(outcomes[0] == .accepted(jobs: 1, duplicateParts: 0))
            guard case .failed(let reason) = outcomes[1] else {
                Issue.record("the refused submission was \(outcomes[1])")
                return
            }
            #expect(reason.contains("SQLSTATE 22021"), "\(reason)")
            #expect(outcomes[2] == .accepted(jobs: 1, duplicateParts: 0))
            #expect(try await store.headJobs(limit: 10).map(\.orderID) == ["1", "3"])
            #expect(try await server.psql("SELECT string_agg(id, ',' ORDER BY id) FROM orderlive_dedupe_key", database: database)
                    == "notification:n-a,notification:n-c,request:a,request:c", "the refused one left no key")
            #expect(store.writeHealth.writable, "a refused value is not a database fault")
        }
    }

    @Test func aRunOfJobsWrittenInOneStatementKeepsOrderNullsAndCollapsing() async throws {
        let server = try await PostgresServer.running()
        let database = try await server.database()
        try await withPostgresStore(server: server, database: database, account: "acme") { store in
            var bare = try order(2, version: 1)
            bare.storeID = nil
            bare.courierID = nil
            bare.updatedAt = nil
            let first = try order(1, version: 3, updatedAt: "2026-01-01T00:00:00Z")
            try await store.journal([
                NewJob(kind: .fetch, orderID: "9", version: 1, source: "stream"),
                NewJob(kind: .upsert, order: first, source: "stream"),
                NewJob(kind: .upsert, order: bare, source: "stream"),
                NewJob(kind: .delete, orderID: "4", source: "stream"),
                NewJob(kind: .fetch, orderID: "9", version: 5, source: "stream"),
                NewJob(kind: .delete, orderID: "5", version: 2, source: "stream"),
            ], cursor: nil, deadLetters: [])
            let jobs = try await store.headJobs(limit: 10)
            #expect(jobs.map(\.kind) == [.fetch, .upsert, .upsert, .delete, .delete])
            #expect(jobs.map(\.orderID) == ["9", "1", "2", "4", "5"])
            #expect(jobs.map(\.version) == [5, 3, 1, nil, 2], "the second fetch of 9 raised the pending one's version")
            #expect(jobs[1].updatedAt == "2026-01-01T00:00:00Z" && jobs[1].payload == first.body)
            #expect(jobs[2].storeID == nil && jobs[2].courierID == nil && jobs[2].updatedAt == nil && jobs[2].payload == bare.body)
            #expect(jobs[3].payload == nil && jobs[3].status == nil)
            let ids = jobs.compactMap(\.id)
            #expect(ids == ids.sorted())
        }
    }

    /// The executor's run of upserts and deletes is applied in one transaction at a fixed number of
    /// round trips; it must leave exactly what applying the same jobs one by one leaves: the orders,
    /// the tombstones and the change log, over random runs that revisit the same few orders.
    @Test(arguments: [1, 2, 3, 4, 5, 6])
    func aRunAppliedAtOnceEqualsTheSameJobsAppliedOneByOne(seed: UInt64) async throws {
        var random = SplitMix(state: seed)
        let server = try await PostgresServer.running()
        let database = try await server.database()
        try await withPostgresStore(server: server, database: database, account: "batch") { batch in
            try await withPostgresStore(server: server, database: database, account: "single") { single in
                let statuses = ["created", "assigned", "picked_up", "delivered"]
                let starts = (batch: try await batch.changeHead(), single: try await single.changeHead())
                for _ in 0..<4 {
                    var jobs: [NewJob] = []
                    for _ in 0..<(8 + Int(random.next() % 24)) {
                        let id = Int(random.next() % 5) + 1
                        let version: Int? = random.next() % 6 == 0 ? nil : Int(random.next() % 6) + 1
                        if random.next() % 4 == 0 {
                            jobs.append(NewJob(kind: .delete, orderID: "\(id)", version: version.map(Int64.init), source: "t"))
                        } else {
                            let updatedAt = random.next() % 3 == 0 ? "2026-01-0\(random.next() % 9 + 1)T00:00:00Z" : nil
                            var extra: [String: Any] = [:]
                            if random.next() % 2 == 0 { extra["store_id"] = Int(random.next() % 3) }
                            if random.next() % 3 == 0 { extra["courier_id"] = "c\(random.next() % 3)" }
                            let record = try order(id, status: statuses[Int(random.next() % 4)], version: version,
                                                   updatedAt: updatedAt, extra: extra)
                            jobs.append(NewJob(kind: .upsert, order: record, source: "t"))
                        }
                    }
                    try await batch.journal(jobs, cursor: nil, deadLetters: [])
                    let head = try await batch.headJobs(limit: 100)
                    #expect(try await batch.applyInOneTransaction(head) == jobs.count)
                    for job in jobs {
                        if job.kind == .upsert, let record = job.order {
                            _ = try await single.applyUpsert(record, completing: nil)
                        } else if let id = job.orderID {
                            _ = try await single.applyDelete(orderID: id, version: job.version, completing: nil)
                        }
                    }
                }
                func state(_ store: PostgresOrderStore, from start: Int64) async throws -> [String] {
                    var lines = try await store.orders(status: nil).map {
                        "order \($0.id) \($0.status) \($0.version.map(String.init) ?? "-") \($0.updatedAt ?? "-") "
                            + "\($0.storeID ?? "-") \($0.courierID ?? "-") \($0.body)"
                    }
                    for id in 1...5 {
                        if let tombstone = try await store.tombstone(id: "\(id)") {
                            lines.append("tombstone \(id) \(tombstone.version.map(String.init) ?? "-") \(tombstone.updatedAt ?? "-")")
                        }
                    }
                    guard case .changes(let changes) = try await store.changes(after: start, limit: 1_000) else { return lines }
                    for change in changes {
                        lines.append("change +\(change.seq - start) \(change.kind) \(change.orderID) "
                            + "\(change.version.map(String.init) ?? "-") \(change.body ?? "-") \(String(describing: change.after)) "
                            + "\(String(describing: change.before))")
                    }
                    return lines
                }
                let (once, oneByOne) = (try await state(batch, from: starts.batch), try await state(single, from: starts.single))
                #expect(once == oneByOne)
                #expect(once.contains { $0.hasPrefix("change") } && once.contains { $0.hasPrefix("tombstone") })
            }
        }
    }

    @Test func aLeaderWhoseEpochWasTakenOverCannotCommitAndChangesNothing() async throws {
        let server = try await PostgresServer.running()
        let database = try await server.database()
        try await withPostgresStore(server: server, database: database, account: "acme") { store in
            _ = try await server.psql(
                "INSERT INTO orderlive_leadership (account, epoch, leader, since) VALUES ('acme', 1, 'a:1', 0)",
                database: database)
            store.fence(epoch: 1)
            #expect(try await store.applyUpsert(try order(1, version: 1), completing: nil) == .applied)
            try await store.journal([NewJob(kind: .fetch, orderID: "2", source: "stream")], cursor: "5", deadLetters: [])
            // Another agent takes over.
            _ = try await server.psql("UPDATE orderlive_leadership SET epoch = 2, leader = 'b:2' WHERE account = 'acme'",
                                      database: database)
            await #expect(throws: FencedOut.self) {
                try await store.applyUpsert(try order(1, status: "delivered", version: 2), completing: nil)
            }
            await #expect(throws: FencedOut.self) {
                try await store.journal([], cursor: "6", deadLetters: [])
            }
            let job = try #require(try await store.headJobs(limit: 1).first)
            await #expect(throws: FencedOut.self) {
                try await store.applyInOneTransaction([job])
            }
            #expect(try await store.order(id: "1")?.version == 1)
            #expect(try await store.streamCursor() == "5")
            #expect(try await store.headJobs(limit: 10).count == 1)
            #expect(store.writeHealth.writable, "being fenced is not a database fault")
            // Pushes are every agent's, leader or not: the journal takes them without the fence.
            let outcome = await store.accept(
                [IdempotentSubmission(requestKey: "msg_9", parts: [], response: "{}")],
                policy: SubmissionPolicy(dedupeSince: 0, highWaterJobs: 100))
            #expect(outcome == [.accepted(jobs: 0, duplicateParts: 0)])
        }
    }

    @Test func aStoppedDatabaseIsReportedAsUnwritableAndNeverCrashesTheCaller() async throws {
        // A port nobody listens on: every call fails with a reason, nothing traps.
        var configuration = try PostgresStoreConfiguration(
            url: "postgres://postgres@127.0.0.1:1/none?sslmode=disable", password: nil, account: "acme")
        configuration.connectTimeout = .seconds(1)
        let store = PostgresOrderStore(configuration: configuration, logger: quietLogger)
        await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await store.run() }
            defer { group.cancelAll() }
            await #expect(throws: (any Error).self) { try await store.prepare() }
            let outcome = await store.accept(
                [IdempotentSubmission(requestKey: "k", parts: [], response: "{}")],
                policy: SubmissionPolicy(dedupeSince: 0, highWaterJobs: 10))
            guard case .failed(let reason) = outcome.first else {
                Issue.record("expected a failure, got \(outcome)")
                return
            }
            #expect(reason.contains("cannot be reached") && reason.contains("store.postgres_url"))
            #expect(!store.writeHealth.writable)
            #expect(store.writeHealth.reason == "the database cannot be reached")
        }
    }

    @Test func theURLIsReadAsLibpqDoesAndAPasswordInItIsRefusedWithoutRepeatingIt() throws {
        let read = try PostgresStoreConfiguration(
            url: "postgres://orderlive@db.example:6543/orders?sslmode=verify-full", password: "from-file", account: "a")
        #expect(read.host == "db.example" && read.port == 6543 && read.username == "orderlive")
        #expect(read.database == "orders" && read.sslMode == .verifyFull && read.password == "from-file")
        let defaults = try PostgresStoreConfiguration(url: "postgresql://me@localhost", password: nil, account: "a")
        #expect(defaults.port == 5432 && defaults.database == "me" && defaults.sslMode == .prefer)
        let refusals: [(String, String)] = [
            ("postgres://me:s3cr3t-pw@db/orders", "holds a password"),
            ("mysql://me@db/orders", "is not a postgres:// URL"),
            ("postgres://db/orders", "names no user"),
            ("postgres://me@db/orders?sslmode=sometimes", "sslmode"),
            ("postgres://me@db/orders?connect_timeout=3", "'connect_timeout'"),
            ("postgres://me@db:99999/orders", "outside 1–65535"),
        ]
        for (url, expected) in refusals {
            do {
                _ = try PostgresStoreConfiguration(url: url, password: nil, account: "a")
                Issue.record("\(url) was accepted")
            } catch {
                #expect(error.message.contains(expected), "\(url): \(error.message)")
                #expect(!error.message.contains("s3cr3t-pw"))
            }
        }
    }
}

/// The database going away and coming back, under one store: calls fail with a reason within the
/// connect timeout while it is gone, and succeed again once it is back, without a restart.
@Suite(.timeLimit(.minutes(5))) struct PostgresRestartTests {
    @Test func aStoreAnswersWhileTheDatabaseIsGoneAndRecoversWhenItIsBack() async throws {
        try await HeavyScenarios.gate.exclusively {
            let server = try await PostgresServer.dedicated()
            let database = try await server.database()
            var configuration = try PostgresStoreConfiguration(url: server.url(database: database), password: nil, account: "acme")
            configuration.connectTimeout = .seconds(2)
            let store = PostgresOrderStore(configuration: configuration, logger: quietLogger)
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { await store.run() }
                defer { group.cancelAll() }
                // As an agent does, the first use is retried while the new cluster is slow to answer.
                var prepared = false
                for _ in 0..<5 where !prepared { prepared = (try? await store.prepare()) != nil }
                #expect(try await store.applyUpsert(try order(1, version: 1), completing: nil) == .applied)
                try await server.stop()
                let clock = ContinuousClock()
                for _ in 0..<3 {
                    let started = clock.now
                    await #expect(throws: (any Error).self) { try await store.applyUpsert(try order(1, version: 2), completing: nil) }
                    #expect(clock.now - started < .seconds(4), "a call waited \(clock.now - started) (connect timeout 2 s)")
                }
                #expect(!store.writeHealth.writable)
                await store.probeWrite()
                #expect(!store.writeHealth.writable, "a probe while the database is gone fails too")
                try await server.start()
                // The probe alone, with nothing else written, finds the database back (issue 37).
                for _ in 0..<20 where !store.writeHealth.writable { await store.probeWrite() }
                #expect(store.writeHealth.writable, "the probe cleared the fault")
                #expect(try await store.order(id: "1")?.version == 1, "the probe wrote nothing")
                var recovered = false
                for _ in 0..<20 where !recovered {
                    recovered = (try? await store.applyUpsert(try order(1, version: 3), completing: nil)) == .applied
                }
                #expect(recovered)
                #expect(store.writeHealth.writable)
                #expect(try await store.order(id: "1")?.version == 3)
            }
            try? await server.stop()
        }
    }
}
