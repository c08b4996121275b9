import Agent
import Commands
import Foundation
import SQLiteStore
import StoreModel
import Testing
import TestKit
import InMemoryLogging
import Logging

/// `orderlive dead-letters list|show|drop` and `orderlive journal list` as an operator runs them at
/// 3 a.m., over a store written as the agent writes it; in process, with the console's lines and the
/// notices kept. What the process adds (exit 1 for a failure, 2 for a usage error) is
/// CommandLineTests'.
@Suite(.timeLimit(.minutes(2))) struct FailureCommandsTests {
    /// A state directory whose store holds one job given up on (a backend that answered 503), one
    /// event that could not be read, and one job still waiting.
    static func stand() throws -> (OrderliveConfiguration, String) {
        let (configuration, directory) = try CommandRulesTests.stateDirectory()
        let store = try SQLiteOrderStore(path: directory + "/orderlive.sqlite")
        try store.journal([
            NewJob(kind: .fetch, orderID: "7", version: 3, source: "push"),
            NewJob(kind: .fetch, orderID: "8", source: "stream"),
        ], cursor: nil, deadLetters: [
            DeadLetterRecord(kind: "event", orderID: nil, raw: "data: {not json", reason: "the event's data is not JSON",
                             attempts: 0, createdAt: Date().timeIntervalSince1970),
        ])
        let failing = try #require(try store.pendingJobs(limit: 1).first)
        try store.deadLetter(job: failing, reason: "the backend answered 503 Service Unavailable for GET /v1/orders/7")
        let waiting = try #require(try store.pendingJobs(limit: 1).first?.id)
        try store.recordFailure(jobID: waiting, reason: "the backend did not answer", retryAt: Date().timeIntervalSince1970 + 3_600,
                                countsAttempt: true)
        return (configuration, directory)
    }

    /// What one command wrote to its console.
    static func run(
        _ configuration: OrderliveConfiguration, logs: CapturedLogs = CapturedLogs(),
        _ command: (OperatorCommands) async throws -> Void
    ) async throws -> String {
        let captured = CommandRulesTests.Captured()
        try await command(OperatorCommands(configuration, console: captured.console, notices: logs.logger(level: .notice)))
        return captured.output.joined(separator: "\n")
    }

    static func objects(_ json: String) throws -> [[String: Any]] {
        try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [[String: Any]])
    }

    @Test func deadLettersAreListedWithTheirCauseAndShownWithWhatTheyCarried() async throws {
        let (configuration, directory) = try Self.stand()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let letters = try Self.objects(try await Self.run(configuration) { try await $0.deadLetters(json: true) })
        #expect(letters.count == 2)
        let event = letters[0]
        #expect(event["kind"] as? String == "event" && event["order_id"] is NSNull && event["first_attempt_at"] is NSNull)
        let job = letters[1]
        #expect(job["kind"] as? String == "fetch" && job["order_id"] as? String == "7" && job["attempts"] as? Int == 0)
        #expect(job["last_error"] as? String == "the backend answered 503 Service Unavailable for GET /v1/orders/7")
        #expect((job["first_attempt_at"] as? String)?.hasSuffix("Z") == true && (job["dead_at"] as? String)?.hasSuffix("Z") == true)
        #expect(job["version"] as? Int == 3)
        for key in ["id", "kind", "order_id", "attempts", "last_error", "first_attempt_at", "dead_at"] {
            #expect(letters.allSatisfy { $0.keys.contains(key) }, "every object has \(key)")
        }

        let text = try await Self.run(configuration) { try await $0.deadLetters(json: false) }
        #expect(text.hasPrefix("ID") && text.contains("the backend answered 503"), "\(text)")
        let id = try #require(job["id"] as? Int)
        let detail = try await Self.run(configuration) { try await $0.deadLetter(id: "\(id)", json: true) }
        let object = try #require(try JSONSerialization.jsonObject(with: Data(detail.utf8)) as? [String: Any])
        #expect(object["id"] as? Int == id && object["raw"] as? String == "")
        let eventID = try #require(event["id"] as? Int)
        let eventText = try await Self.run(configuration) { try await $0.deadLetter(id: "\(eventID)", json: false) }
        #expect(eventText.contains("raw:              data: {not json"), "\(eventText)")
    }

    @Test func anUnknownIDIsAFailureThatNamesItAndAMalformedOneAUsageError() async throws {
        let (configuration, directory) = try Self.stand()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let commands = OperatorCommands(configuration, console: CommandRulesTests.Captured().console)
        let unknown = await #expect(throws: CommandFailure.self) { try await commands.deadLetter(id: "999", json: false) }
        #expect(unknown?.description.contains("no dead letter 999 in the local store") == true, "\(String(describing: unknown))")
        for malformed in ["abc", "0", "1.5", "-3", "99999999999999999999999"] {
            let usage = await #expect(throws: CommandUsageError.self) { try await commands.deadLetter(id: malformed, json: false) }
            #expect(usage?.description.contains("'\(malformed)' is not a dead letter id") == true, "\(malformed)")
        }
    }

    @Test func droppedDeadLettersAreGoneAndEachIsLoggedAndAnUnknownIDChangesNothing() async throws {
        let (configuration, directory) = try Self.stand()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let ids = try Self.objects(try await Self.run(configuration) { try await $0.deadLetters(json: true) })
            .compactMap { ($0["id"] as? Int).map(Int64.init) }
        #expect(ids.count == 2)

        let refused = await #expect(throws: CommandFailure.self) {
            _ = try await Self.run(configuration) { try await $0.repairDeadLetters(.drop, ids: [ids[0], 999], confirmed: false) }
        }
        #expect(refused?.description.contains("no dead letter 999 in the local store; nothing was changed") == true)
        #expect(try await Self.run(configuration) { try await $0.deadLetters(json: true) }.contains("\"id\":\(ids[0])"))

        let logs = CapturedLogs()
        let said = try await Self.run(configuration, logs: logs) { try await $0.repairDeadLetters(.drop, ids: [ids[1]], confirmed: false) }
        #expect(said == "Dropped 1 dead letter.")
        let notices = logs.entries("dead letter dropped")
        #expect(notices.count == 1, "one notice per dead letter: \(logs.text)")
        #expect(notices.first?.metadata["dead_letter.id"] == "\(ids[1])" && notices.first?.metadata["order_id"] == "7"
                && notices.first?.metadata["dead_letter.kind"] == "fetch", "\(logs.text)")
        let left = try await Self.run(configuration) { try await $0.deadLetters(json: true) }
        #expect(!left.contains("\"id\":\(ids[1])") && left.contains("\"id\":\(ids[0])"), "\(left)")

        // Not on a terminal, every dead letter is dropped without a question.
        let gone = try await Self.run(configuration) { try await $0.repairDeadLetters(.drop, ids: nil, confirmed: false) }
        #expect(gone == "Dropped 1 dead letter.")
        #expect(try await Self.run(configuration) { try await $0.deadLetters(json: false) } == "No dead letters.")
    }

    @Test func theJournalListsPendingJobsWithTheirNextAttempt() async throws {
        let (configuration, directory) = try Self.stand()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let jobs = try Self.objects(try await Self.run(configuration) { try await $0.journal(limit: 1_000, json: true) })
        #expect(jobs.count == 1)
        let job = try #require(jobs.first)
        #expect(job["order_id"] as? String == "8" && job["attempts"] as? Int == 1 && job["source"] as? String == "stream")
        #expect((job["next_attempt_at"] as? String)?.hasSuffix("Z") == true, "retried in an hour: \(job)")
        #expect(job["last_error"] as? String == "the backend did not answer")
        let text = try await Self.run(configuration) { try await $0.journal(limit: 1_000, json: false) }
        #expect(text.hasPrefix("ID") && text.contains("fetch"), "\(text)")
    }
}
