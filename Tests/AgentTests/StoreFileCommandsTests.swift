import Agent
import AsyncSignals
import CurlHTTP
import Foundation
import GRDB
import Sandbox
import TestHarnesses
import TestKit
import Testing
import StoreModel

/// `orderlive store backup|restore|check` as processes beside a running agent (issue 38): a backup of
/// a store that an agent is writing (stream events and pushes) is whole and standalone; a restore is
/// refused while the agent runs and then resumes the stream from the backup's cursor. The commands'
/// rules on damaged files are StoreCheckTests', in process.
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
}
