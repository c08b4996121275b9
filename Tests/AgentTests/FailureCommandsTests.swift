import Foundation
import SQLiteStore
import StoreModel
import Testing
import TestKit

/// `orderlive dead-letters list|show` and `orderlive journal list` as an operator runs them at 3 a.m.
/// (issue 38, first part), over a store written as the agent writes it.
@Suite(.timeLimit(.minutes(3))) struct FailureCommandsTests {
    /// A state directory whose store holds one job given up on (a backend that answered 503), one
    /// event that could not be read, and one job still waiting.
    static func stand() throws -> String {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("orderlive-failures-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
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
        return directory
    }

    static func run(_ arguments: [String], in directory: String) async throws -> (status: Int32, output: String) {
        let child = try OrderliveProcess(arguments, environment: ["ORDERLIVE_STORE_STATE_DIR": directory], lifetime: .seconds(60))
        var lines: [String] = []
        for await line in child.lines { lines.append(line) }
        let (status, errors) = await child.waitForExit()
        return (status, lines.joined(separator: "\n") + errors)
    }

    @Test func deadLettersAreListedWithTheirCauseAndShownWithWhatTheyCarried() async throws {
        let directory = try Self.stand()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let (listed, json) = try await Self.run(["dead-letters", "list", "--json"], in: directory)
        #expect(listed == 0, "\(json)")
        let letters = try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [[String: Any]])
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

        let (shown, text) = try await Self.run(["dead-letters", "list"], in: directory)
        #expect(shown == 0 && text.hasPrefix("ID") && text.contains("the backend answered 503"), "\(text)")
        let id = try #require(job["id"] as? Int)
        let (one, detail) = try await Self.run(["dead-letters", "show", "\(id)", "--json"], in: directory)
        #expect(one == 0, "\(detail)")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(detail.utf8)) as? [String: Any])
        #expect(object["id"] as? Int == id && object["raw"] as? String == "")
        let eventID = try #require(event["id"] as? Int)
        let (_, eventText) = try await Self.run(["dead-letters", "show", "\(eventID)"], in: directory)
        #expect(eventText.contains("raw:              data: {not json"), "\(eventText)")
    }

    @Test func anUnknownIDIsAnErrorThatNamesItAndAMalformedOneAUsageError() async throws {
        let directory = try Self.stand()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let (unknown, said) = try await Self.run(["dead-letters", "show", "999"], in: directory)
        #expect(unknown == 1 && said.contains("no dead letter 999 in the local store"), "\(said)")
        for malformed in ["abc", "0", "1.5", "99999999999999999999999"] {
            let (status, usage) = try await Self.run(["dead-letters", "show", malformed], in: directory)
            #expect(status == 2 && usage.contains("'\(malformed)' is not a dead letter id"), "\(malformed): \(usage)")
        }
    }

    @Test func droppedDeadLettersAreGoneAndEachIsLoggedAndAnUnknownIDChangesNothing() async throws {
        let directory = try Self.stand()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let (_, json) = try await Self.run(["dead-letters", "list", "--json"], in: directory)
        let ids = try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [[String: Any]]).compactMap { $0["id"] as? Int }
        #expect(ids.count == 2)

        let (unknown, refused) = try await Self.run(["dead-letters", "drop", "\(ids[0])", "999"], in: directory)
        #expect(unknown == 1 && refused.contains("no dead letter 999 in the local store; nothing was changed"), "\(refused)")
        #expect(try await Self.run(["dead-letters", "list", "--json"], in: directory).output.contains("\"id\":\(ids[0])"))

        let (dropped, said) = try await Self.run(["dead-letters", "drop", "\(ids[1])"], in: directory)
        #expect(dropped == 0 && said.contains("Dropped 1 dead letter."), "\(said)")
        #expect(said.contains("dead letter dropped") && said.contains("dead_letter.id=\(ids[1])") && said.contains("order_id=7"),
                "one notice line per job, with its id, kind and order: \(said)")
        let (_, left) = try await Self.run(["dead-letters", "list", "--json"], in: directory)
        #expect(!left.contains("\"id\":\(ids[1])") && left.contains("\"id\":\(ids[0])"), "\(left)")

        let (usage, what) = try await Self.run(["dead-letters", "drop"], in: directory)
        #expect(usage == 2 && what.contains("name the dead letters to drop (ids), or --all"), "\(what)")
        // Not on a terminal, --all asks nothing.
        let (all, gone) = try await Self.run(["dead-letters", "drop", "--all"], in: directory)
        #expect(all == 0 && gone.contains("Dropped 1 dead letter."), "\(gone)")
        #expect(try await Self.run(["dead-letters", "list"], in: directory).output.contains("No dead letters."))
    }

    @Test func theJournalListsPendingJobsWithTheirNextAttempt() async throws {
        let directory = try Self.stand()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let (status, json) = try await Self.run(["journal", "list", "--json"], in: directory)
        #expect(status == 0, "\(json)")
        let jobs = try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [[String: Any]])
        #expect(jobs.count == 1)
        let job = try #require(jobs.first)
        #expect(job["order_id"] as? String == "8" && job["attempts"] as? Int == 1 && job["source"] as? String == "stream")
        #expect((job["next_attempt_at"] as? String)?.hasSuffix("Z") == true, "retried in an hour: \(job)")
        #expect(job["last_error"] as? String == "the backend did not answer")
        let (_, text) = try await Self.run(["journal", "list"], in: directory)
        #expect(text.hasPrefix("ID") && text.contains("fetch"), "\(text)")
        let empty = FileManager.default.temporaryDirectory.appendingPathComponent("orderlive-none-\(UUID().uuidString)").path
        let (none, nothing) = try await Self.run(["journal", "list"], in: empty)
        #expect(none == 0 && nothing.contains("The journal is empty"), "no store yet: \(nothing)")
    }
}
