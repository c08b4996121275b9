import Agent
import AsyncSignals
import CurlHTTP
import Foundation
import GRDB
import Sandbox
import TestHarnesses
import TestKit
import Testing

/// `orderlive store backup|restore|check` (issue 38): a backup of a store that an agent is writing
/// (stream events and pushes) is whole and standalone; a restore is refused while the agent runs and
/// then resumes the stream from the backup's cursor; a check tells a sound store from a damaged one.
@Suite(.timeLimit(.minutes(5))) struct StoreFileCommandsTests {
    static func run(_ arguments: [String], in directory: String, environment: [String: String] = [:]) async throws
        -> (status: Int32, output: String) {
        let child = try OrderliveProcess(
            arguments, environment: ["ORDERLIVE_STORE_STATE_DIR": directory].merging(environment) { $1 }, lifetime: .seconds(120))
        var lines: [String] = []
        for await line in child.lines { lines.append(line) }
        let (status, errors) = await child.waitForExit()
        return (status, lines.joined(separator: "\n") + errors)
    }

    /// What a copy holds, read as any SQLite program would read it.
    static func contents(_ path: String) throws -> (integrity: [String], orders: Int, cursor: String?) {
        var configuration = Configuration()
        configuration.readonly = true
        let queue = try DatabaseQueue(path: path, configuration: configuration)
        defer { try? queue.close() }
        return try queue.read { db in
            (try String.fetchAll(db, sql: "PRAGMA integrity_check"),
             try Int.fetchOne(db, sql: #"SELECT COUNT(*) FROM "order""#) ?? 0,
             try String.fetchOne(db, sql: "SELECT value FROM stream_cursor WHERE id = 'stream'"))
        }
    }

    @Test func aBackupUnderLoadIsWholeAndARestoreResumesFromItsCursor() async throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("orderlive-backup-\(UUID().uuidString)").path
        let directory = root + "/state"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: root) }
        let sandboxConfiguration = SandboxConfiguration(
            port: 0, auth: SandboxAuthConfiguration(requiresAuthentication: true), feed: .orderBook)
        try await Sandbox.withRunning(sandboxConfiguration) { sandbox in
            let requests = Locked<[String]>([])
            let recorder = Task { for await request in sandbox.streamRequests { requests.withLock { $0.append(request.header("Last-Event-ID") ?? "") } } }
            defer { recorder.cancel() }
            let book = sandbox.orders
            for _ in 0..<20 { book.create() }
            let loop = try CurlLoop(logger: quietLogger)
            var agent: DeadLetterRetryAgentTests.Agent? = try await DeadLetterRetryAgentTests.Agent(sandbox, directory: directory)
            let first = try #require(agent)
            #expect(try await first.until { try await $0.store.orders(status: nil).count == 20 }, "the agent never caught up")

            // Stream events and pushes while three backups are taken.
            let writing = StopFlag()
            let load = Task {
                var step = 0
                while !writing.isStopped {
                    step += 1
                    let id = book.create(status: "created", storeID: 1 + step % 3)
                    book.update(id, status: "assigned", announce: .silent)
                    try? await first.push(id, loop: loop)
                }
                return step
            }
            var copies: [String] = []
            for index in 1...3 {
                let copy = root + "/backup-\(index).sqlite"
                let (status, said) = try await Self.run(["store", "backup", copy], in: directory)
                #expect(status == 0 && said.contains("Backed up") && said.contains("to \(copy)"), "\(said)")
                copies.append(copy)
            }
            writing.stop()
            let written = await load.value
            #expect(written > 0)
            #expect(try await first.until { try await $0.store.orders(status: nil).count == book.snapshot.count })
            let total = try await first.program.store.orders(status: nil).count
            for copy in copies {
                let (integrity, orders, cursor) = try Self.contents(copy)
                #expect(integrity == ["ok"] && orders >= 20 && orders <= total && cursor != nil, "\(copy): \(integrity) \(orders)")
                #expect(!FileManager.default.fileExists(atPath: copy + "-wal"), "standalone: no -wal beside it")
                let (checked, verdict) = try await Self.run(["store", "check", copy], in: directory)
                #expect(checked == 0 && verdict.hasPrefix("ok: \(copy): integrity ok, \(orders) orders"), "\(verdict)")
            }

            // Never over an existing file without --force; an unwritable path is named.
            let (refused, why) = try await Self.run(["store", "backup", copies[0]], in: directory)
            #expect(refused == 1 && why.contains("\(copies[0]) already exists; choose another file, or --force"), "\(why)")
            #expect(try await Self.run(["store", "backup", "--force", copies[0]], in: directory).status == 0)
            let nowhere = root + "/missing/backup.sqlite"
            let (unwritable, named) = try await Self.run(["store", "backup", nowhere], in: directory)
            #expect(unwritable == 1 && named.contains("cannot write \(nowhere): No such file or directory"), "\(named)")

            // Restore: refused while the agent holds the store, then done with it stopped.
            let backup = copies[1]
            let (_, _, backupCursor) = try Self.contents(backup)
            let (held, busy) = try await Self.run(["store", "restore", backup], in: directory)
            #expect(held == 1 && busy.contains("an agent is running on \(directory)") && busy.contains("nothing was changed"), "\(busy)")
            try await first.stop()
            agent = nil
            for _ in 0..<5 { book.create() }
            let (restored, told) = try await Self.run(["store", "restore", backup], in: directory)
            #expect(restored == 0 && told.contains("Restored") && told.contains("The replaced store is kept as"), "\(told)")
            let kept = try FileManager.default.contentsOfDirectory(atPath: directory).filter { $0.hasPrefix("orderlive.sqlite.replaced-") }
            #expect(kept.contains { !$0.hasSuffix("-wal") }, "\(kept)")

            // The next start resumes the stream from the backup's cursor and catches up.
            let before = requests.withLock { $0.count }
            let resumed = try await DeadLetterRetryAgentTests.Agent(sandbox, directory: directory)
            #expect(try await resumed.until { _ in requests.withLock { $0.count } > before }, "the stream was not opened")
            #expect(requests.withLock { $0[before] } == backupCursor, "resumed from \(requests.withLock { $0[before] })")
            #expect(try await resumed.until { try await $0.store.orders(status: nil).count == book.snapshot.count },
                    "the restored store did not catch up")
            try await resumed.stop()
            await loop.shutdown()
        }
    }

    @Test func aCheckTellsASoundStoreFromADamagedOneAndADamagedFileIsNeverRestored() async throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("orderlive-check-\(UUID().uuidString)").path
        let directory = try FailureCommandsTests.stand()
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        defer {
            try? FileManager.default.removeItem(atPath: root)
            try? FileManager.default.removeItem(atPath: directory)
        }
        let (sound, said) = try await Self.run(["store", "check"], in: directory)
        #expect(sound == 0 && said.contains("integrity ok, 0 orders, 1 pending jobs, 2 dead letters"), "\(said)")
        #expect(said.contains("no stream cursor yet"), "a note, not a failure: \(said)")

        // A copy with every page after the first overwritten.
        let copy = root + "/copy.sqlite"
        #expect(try await Self.run(["store", "backup", copy], in: directory).status == 0)
        let damaged = root + "/damaged.sqlite"
        var bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: copy)))
        #expect(bytes.count > 8_192)
        for index in 4_096..<bytes.count { bytes[index] = UInt8(truncatingIfNeeded: index &* 31) }
        try Data(bytes).write(to: URL(fileURLWithPath: damaged))
        let (failed, why) = try await Self.run(["store", "check", damaged], in: directory)
        #expect(failed == 1 && why.contains("store check failed for \(damaged)"), "\(why)")
        #expect(why.contains("integrity check failed") || why.contains("is damaged"), "\(why)")

        let garbage = root + "/notes.txt"
        try Data(String(repeating: "not a database\n", count: 400).utf8).write(to: URL(fileURLWithPath: garbage))
        let (notDatabase, told) = try await Self.run(["store", "check", garbage], in: directory)
        #expect(notDatabase == 1 && told.contains("\(garbage) is not an SQLite database"), "\(told)")

        let store = directory + "/orderlive.sqlite"
        let before = try Data(contentsOf: URL(fileURLWithPath: store))
        let (refused, words) = try await Self.run(["store", "restore", damaged], in: directory)
        #expect(refused == 1 && words.contains("\(damaged) cannot be restored") && words.contains("nothing was changed"), "\(words)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: store)) == before)

        let postgres = ["ORDERLIVE_STORE_BACKEND": "postgres", "ORDERLIVE_STORE_POSTGRES_URL": "postgres://orderlive@127.0.0.1:1/orderlive"]
        let (other, pointed) = try await Self.run(["store", "backup", copy], in: directory, environment: postgres)
        #expect(other == 1 && pointed.contains("with PostgreSQL use pg_dump"), "\(pointed)")
    }
}
