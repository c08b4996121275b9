import Agent
import Commands
import Foundation
import SQLiteStore
import StoreModel
import Synchronization
import Testing

/// The commands' rules run in process, against a real SQLite store in a temporary state directory:
/// what each writes, what it asks, what it refuses. The spawn-the-binary tests keep what is about the
/// process (exit codes, signals, terminals).
@Suite(.timeLimit(.minutes(2))) struct CommandRulesTests {
    /// A console whose lines are kept, with scripted answers.
    final class Captured: Sendable {
        let lines = Mutex<[String]>([])
        let notes = Mutex<[String]>([])
        let answers: Mutex<[String]>
        let canAsk: Bool

        init(answers: [String] = [], canAsk: Bool = false) {
            self.answers = Mutex(answers)
            self.canAsk = canAsk
        }

        var console: Console {
            Console(
                write: { line in self.lines.withLock { $0.append(line) } },
                note: { line in self.notes.withLock { $0.append(line) } },
                canAsk: canAsk,
                readAnswer: { self.answers.withLock { $0.isEmpty ? nil : $0.removeFirst() } })
        }

        var output: [String] { lines.withLock { $0 } }
    }

    static func stateDirectory() throws -> (OrderliveConfiguration, String) {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("orderlive-commands-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        var configuration = OrderliveConfiguration()
        configuration.store.stateDirectory = directory
        return (configuration, directory)
    }

    /// A store holding one dead letter (a fetch the backend answered 503 for).
    static func withDeadLetter() throws -> (OrderliveConfiguration, String) {
        let (configuration, directory) = try stateDirectory()
        let store = try SQLiteOrderStore(path: directory + "/orderlive.sqlite")
        try store.journal([NewJob(kind: .fetch, orderID: "7", version: 3, source: "push")], cursor: nil)
        let failing = try #require(try store.pendingJobs(limit: 1).first)
        try store.deadLetter(job: failing, reason: "the backend answered 503")
        return (configuration, directory)
    }

    @Test func aStoreNotMadeYetListsNothingInBothForms() async throws {
        let (configuration, directory) = try Self.stateDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let captured = Captured()
        let commands = OperatorCommands(configuration, console: captured.console)
        try await commands.orders(status: "ready", json: false)
        try await commands.orders(status: nil, json: true)
        try await commands.journal(limit: 10, json: false)
        try await commands.deadLetters(json: true)
        #expect(captured.output == ["No orders with status ready.", "[]", "The journal is empty: nothing waits to be applied.", "[]"])
        await #expect(throws: CommandFailure.self) { try await commands.order(id: "7", json: false) }
    }

    @Test func droppingEveryDeadLetterAsksOnATerminalAndNoChangesNothing() async throws {
        let (configuration, directory) = try Self.withDeadLetter()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let refused = Captured(answers: ["n"], canAsk: true)
        try await OperatorCommands(configuration, console: refused.console).repairDeadLetters(.drop, ids: nil, confirmed: false)
        #expect(refused.output == ["Drop all 1 dead letters? [y/N] ", "Nothing changed."])
        let listed = Captured()
        try await OperatorCommands(configuration, console: listed.console).deadLetters(json: false)
        #expect(listed.output.contains { $0.contains("the backend answered 503") }, "\(listed.output)")

        let agreed = Captured(answers: ["yes"], canAsk: true)
        try await OperatorCommands(configuration, console: agreed.console).repairDeadLetters(.drop, ids: nil, confirmed: false)
        #expect(agreed.output.last == "Dropped 1 dead letter.")
        let empty = Captured()
        try await OperatorCommands(configuration, console: empty.console).deadLetters(json: false)
        #expect(empty.output == ["No dead letters."])
    }

    @Test func withoutATerminalOrWithConfirmationNothingIsAsked() async throws {
        let (configuration, directory) = try Self.withDeadLetter()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let piped = Captured(answers: ["n"], canAsk: false)
        try await OperatorCommands(configuration, console: piped.console).repairDeadLetters(.retry, ids: nil, confirmed: false)
        #expect(piped.output == ["Retried 1 dead letter: back in the journal with no attempts made."])
        let journal = Captured()
        try await OperatorCommands(configuration, console: journal.console).journal(limit: 5, json: false)
        #expect(journal.output.contains { $0.contains("fetch") && $0.contains("7") }, "\(journal.output)")
    }

    @Test func unknownDeadLettersChangeNothingAndAreNamed() async throws {
        let (configuration, directory) = try Self.withDeadLetter()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let captured = Captured()
        await #expect {
            try await OperatorCommands(configuration, console: captured.console).repairDeadLetters(.drop, ids: [1, 999], confirmed: true)
        } throws: { error in
            "\(error)".contains("no dead letter 999") && "\(error)".contains("nothing was changed")
        }
        let listed = Captured()
        try await OperatorCommands(configuration, console: listed.console).deadLetters(json: false)
        #expect(listed.output.count == 2, "the header and the one dead letter, still there: \(listed.output)")
    }

    @Test func argumentRulesNameWhatIsWrong() throws {
        #expect(throws: CommandUsageError.self) { try OperatorCommands.deadLetterID("0") }
        #expect(throws: CommandUsageError.self) { try OperatorCommands.deadLetterID("x") }
        #expect(try OperatorCommands.deadLetterID("42") == 42)
        #expect(try OperatorCommands.chosenDeadLetters(ids: [], all: true, repair: .drop) == nil)
        #expect(try OperatorCommands.chosenDeadLetters(ids: ["3", "4"], all: false, repair: .drop) == [3, 4])
        #expect { try OperatorCommands.chosenDeadLetters(ids: [], all: false, repair: .retry) } throws: { error in
            (error as? CommandUsageError)?.message == "name the dead letters to retry (ids), or --all"
        }
        #expect { try OperatorCommands.chosenDeadLetters(ids: ["1"], all: true, repair: .drop) } throws: { error in
            (error as? CommandUsageError)?.message == "give ids or --all, not both"
        }
        #expect(throws: CommandUsageError.self) { try OperatorCommands.checkJournalLimit(0) }
        try OperatorCommands.checkJournalLimit(1_000_000)
        #expect(throws: CommandUsageError.self) { try OperatorCommands.webhookID("-1") }
        #expect(try OperatorCommands.ReplayStart("12") == .after(12))
        #expect(try OperatorCommands.ReplayStart("2026-11-26T09:00:00Z") == .since(1_795_683_600))
        #expect(throws: CommandUsageError.self) { try OperatorCommands.ReplayStart("yesterday") }
    }

    @Test func webhookEndpointsAreAddedListedReplayedAndRemoved() async throws {
        let (configuration, directory) = try Self.stateDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let added = Captured()
        let commands = OperatorCommands(configuration, console: added.console)
        try await commands.addWebhook(url: "http://127.0.0.1:9/hooks", secretFile: nil, events: "order.upserted", storeIDs: "s1, s2")
        let id = try #require(added.output.first.flatMap { Int64($0) })
        let note = try #require(added.notes.withLock { $0.first })
        #expect(note.contains("new signing key is in \(directory)"), "\(note)")
        #expect(!note.contains("whsec_"), "the key itself is never written to the console")

        let listed = Captured()
        try await OperatorCommands(configuration, console: listed.console).listWebhooks(json: true)
        let json = try #require(listed.output.first)
        #expect(json.contains("\"url\":\"http://127.0.0.1:9/hooks\"") && json.contains("\"store_ids\":[\"s1\",\"s2\"]"), "\(json)")

        let changed = Captured()
        let operating = OperatorCommands(configuration, console: changed.console)
        try await operating.setWebhook(id, enabled: false)
        // An empty change log holds nothing to replay: refused, the cursor left where it is.
        await #expect { try await operating.replayWebhook(id, from: .after(0), named: "0") } throws: { error in
            "\(error)".hasPrefix("cannot replay from 0: ") && "\(error)".hasSuffix("; nothing was changed")
        }
        await #expect { try await operating.replayWebhook(id, from: .since(0), named: "1970-01-01T00:00:00Z") } throws: { error in
            "\(error)" == "the change log holds no changes to replay"
        }
        try await operating.setWebhook(id, enabled: true)
        try await operating.removeWebhook(id)
        #expect(changed.output == [
            "Disabled webhook endpoint \(id).", "Enabled webhook endpoint \(id).", "Removed webhook endpoint \(id).",
        ])
        await #expect { try await operating.removeWebhook(id) } throws: { error in
            "\(error)" == "no webhook endpoint \(id); `orderlive webhooks list` shows the ids"
        }
        await #expect(throws: CommandFailure.self) {
            try await operating.addWebhook(url: "ftp://example.com", secretFile: nil, events: nil, storeIDs: nil)
        }
    }

    @Test func storeFileCommandsNamePostgreSQLsOwnTools() async throws {
        var (configuration, directory) = try Self.stateDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let commands = OperatorCommands(configuration, console: Captured().console)
        #expect { try commands.backupStore(to: directory + "/copy.sqlite", replacing: false) } throws: { error in
            "\(error)".contains("there is no store to back up")
        }
        configuration.store.backend = .postgres
        let postgres = OperatorCommands(configuration, console: Captured().console)
        #expect { try postgres.backupStore(to: directory + "/copy.sqlite", replacing: false) } throws: { "\($0)".contains("pg_dump") }
        #expect { try postgres.restoreStore(from: directory + "/copy.sqlite") } throws: { "\($0)".contains("pg_restore") }
        #expect { try postgres.checkStore(nil) } throws: { "\($0)".contains("pg_amcheck") }
    }

    @Test func aBackupIsCheckedAndRestoredInProcess() async throws {
        let (configuration, directory) = try Self.withDeadLetter()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let captured = Captured()
        let commands = OperatorCommands(configuration, console: captured.console)
        let copy = directory + "/backup.sqlite"
        try commands.backupStore(to: copy, replacing: false)
        try commands.checkStore(copy)
        #expect { try commands.backupStore(to: copy, replacing: false) } throws: { "\($0)".contains("backup failed") }
        try commands.restoreStore(from: copy)
        let output = captured.output
        #expect(output.first?.hasPrefix("Backed up ") == true && output.first?.contains("to \(copy)") == true, "\(output)")
        #expect(output.contains { $0.hasPrefix("ok: \(copy): integrity ok") }, "\(output)")
        #expect(output.contains { $0.hasPrefix("Restored ") && $0.contains(directory + "/orderlive.sqlite") }, "\(output)")
        #expect(output.contains { $0.hasPrefix("The replaced store is kept as ") }, "\(output)")
    }
}
