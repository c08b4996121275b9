import Foundation
import SQLiteStore
import StoreModel
import TestHarnesses
import Testing

/// Idempotency keys keep what they were accepted with (DedupeEntry), in both engines: a key reused
/// for other content is never a silent duplicate.
@Suite(.timeLimit(.minutes(5))) struct IdempotencyKeyTests {
    @Test(arguments: StoreEngine.allCases)
    func aKeyReusedForOtherContentIsAConflictOrANewPartNeverADuplicate(_ engine: StoreEngine) async throws {
        func body(_ store: any AnyOrderStore) async throws {
            let policy = SubmissionPolicy(dedupeSince: 0, highWaterJobs: 100)
            func push(_ key: String, body: String, notification: String, content: String, order id: Int) throws -> IdempotentSubmission {
                IdempotentSubmission(
                    requestKey: key, requestFingerprint: body,
                    parts: [.init(key: notification, fingerprint: content,
                                  jobs: [NewJob(kind: .upsert, order: try order(id, version: 1), source: "push")])],
                    response: #"{"for":"\#(key)"}"#)
            }
            // In one batch: a resent request, a reused webhook-id, a reused notif_id.
            let first = await store.accept([
                try push("msg_1", body: "b1", notification: "n-1", content: "c1", order: 1),
                try push("msg_1", body: "b1", notification: "n-1", content: "c1", order: 1),
                try push("msg_1", body: "b2", notification: "n-2", content: "c2", order: 2),
                try push("msg_2", body: "b3", notification: "n-1", content: "c3", order: 3),
            ], policy: policy)
            #expect(first == [
                .accepted(jobs: 1, duplicateParts: 0),
                .duplicate(response: #"{"for":"msg_1"}"#),
                .conflict(key: "msg_1"),
                .accepted(jobs: 1, duplicateParts: 0, reusedParts: 1),
            ])
            #expect(try await store.headJobs(limit: 10).map(\.orderID) == ["1", "3"])
            // Across batches: both contents of n-1 are known; a third is new again.
            let second = await store.accept([
                try push("msg_3", body: "b4", notification: "n-1", content: "c1", order: 4),
                try push("msg_4", body: "b5", notification: "n-1", content: "c3", order: 5),
                try push("msg_5", body: "b6", notification: "n-1", content: "c6", order: 6),
                try push("msg_2", body: "b3", notification: "n-1", content: "c3", order: 3),
            ], policy: policy)
            #expect(second == [
                .accepted(jobs: 0, duplicateParts: 1),
                .accepted(jobs: 0, duplicateParts: 1),
                .accepted(jobs: 1, duplicateParts: 0, reusedParts: 1),
                .duplicate(response: #"{"for":"msg_2"}"#),
            ])
            #expect(try await store.headJobs(limit: 10).map(\.orderID) == ["1", "3", "6"])
            // A key stored before fingerprints (none given) keeps the old rule: any content is a duplicate.
            let legacy = IdempotentSubmission(
                requestKey: "msg_old", parts: [.init(key: "n-old", jobs: [])], response: #"{"for":"old"}"#)
            #expect(await store.accept([legacy], policy: policy) == [.accepted(jobs: 0, duplicateParts: 0)])
            let later = await store.accept([
                try push("msg_old", body: "any", notification: "n-x", content: "cx", order: 7),
                try push("msg_7", body: "b7", notification: "n-old", content: "any", order: 8),
            ], policy: policy)
            #expect(later == [.duplicate(response: #"{"for":"old"}"#), .accepted(jobs: 0, duplicateParts: 1)])
        }
        try await withStore(engine, body)
    }
}
