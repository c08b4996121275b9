import Foundation
import SQLiteStore
import StoreModel
import PushIngest
import Testing
import WebhookSigning

/// Copies of `shared/fixtures` (Gorush's own request bodies, the Standard Webhooks vectors), kept
/// beside this file so the tests run wherever the repository is.
let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures")

@Suite(.timeLimit(.minutes(3))) struct GorushRequestTests {
    @Test func everyFixtureRequestIsAcceptedWithGorushsCounts() throws {
        let directory = fixtures.appendingPathComponent("gorush")
        let files = try FileManager.default.contentsOfDirectory(atPath: directory.path)
            .filter { $0.contains("-request-") }.sorted()
        #expect(files.count >= 20, "the Gorush request fixtures")
        for file in files {
            let body = try [UInt8](Data(contentsOf: directory.appendingPathComponent(file)))
            let object = try JSONSerialization.jsonObject(with: Data(body)) as? [String: Any]
            let notifications = object?["notifications"] as? [[String: Any]] ?? []
            // Gorush's rule, computed independently from the raw JSON.
            let expected = notifications.reduce(0) {
                $0 + (($1["tokens"] as? [Any])?.count ?? 0) + ((($1["topic"] as? String) ?? "").isEmpty ? 0 : 1)
            }
            switch GorushRequest.parse(body, maximumNotifications: 100) {
            case .success(let request):
                #expect(request.counts == expected, "\(file)")
                #expect(request.successBody == #"{"counts":\#(expected),"logs":[],"success":"ok"}"#)
            case .failure(let error):
                Issue.record("\(file) was refused: \(error.message)")
            }
        }
    }

    @Test func gorushBadRequestsHaveItsExactMessages() {
        func message(_ text: String, limit: Int = 100) -> String? {
            if case .failure(let error) = GorushRequest.parse(Array(text.utf8), maximumNotifications: limit) {
                return error.message
            }
            return nil
        }
        #expect(message("not json") == "Missing notifications field.")
        #expect(message("{}") == "Missing notifications field.")
        #expect(message(#"{"notifications": {}}"#) == "Missing notifications field.")
        #expect(message(#"{"notifications": []}"#) == "Notifications field is empty.")
        #expect(message(#"{"notifications": [{}, {}, {}]}"#, limit: 2) == "Number of notifications(3) over limit(2)")
        // Type mismatches are 400s, not crashes.
        #expect(message(#"{"notifications": [{"tokens": ["a"], "platform": "1"}]}"#) == "Missing notifications field.")
        #expect(message(#"{"notifications": [{"tokens": ["a"], "content_available": 1}]}"#) == "Missing notifications field.")
        #expect(GorushError("Notifications field is empty.").body == #"{"code":400,"message":"Notifications field is empty."}"#)
    }

    @Test func countsAddOneForATopicAndIgnoreUnknownKeys() throws {
        let body = #"{"notifications":[{"tokens":["a","b"],"platform":1,"topic":"com.x","legacy":true},{"platform":2,"tokens":["c"],"data":{"order_id":"12","n":[1,{"x":null}]}}]}"#
        let request = try GorushRequest.parse(Array(body.utf8), maximumNotifications: 100).get()
        #expect(request.counts == 4)
        #expect(request.notifications[1].data?.orderID == "12")
    }
}

@Suite(.timeLimit(.minutes(3))) struct StandardWebhooksTests {
    private let sw1 = (secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", id: "msg_p5jXN8AQM9LWM0D4loKWxJek",
                       timestamp: Int64(1_614_265_330), body: Array(#"{"test": 2432232314}"#.utf8),
                       signature: "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=")

    @Test func referenceVectorsSignAndVerify() throws {
        let verifier = try StandardWebhooks(secret: sw1.secret)
        #expect(verifier.sign(id: sw1.id, timestamp: sw1.timestamp, body: sw1.body) == sw1.signature)
        let rust = try StandardWebhooks(secret: "whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD")
        #expect(rust.sign(id: "msg_27UH4WbU6Z5A5EzD8u03UvzRbpk", timestamp: 1_649_367_553,
                          body: Array(#"{"email":"test@example.com","username":"test_user"}"#.utf8))
            == "v1,tZ1I4/hDygAJgO5TYxiSd6Sd0kDW6hPenDe+bTa3Kkw=")
        #expect(throws: Never.self) {
            try verifier.verify(id: sw1.id, timestamp: "\(sw1.timestamp)", signatures: sw1.signature, body: sw1.body,
                                now: sw1.timestamp).get()
        }
        // The bare base64 secret, with or without padding, verifies the same.
        for secret in ["MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"] {
            let bare = try StandardWebhooks(secret: secret)
            #expect(bare.sign(id: sw1.id, timestamp: sw1.timestamp, body: sw1.body) == sw1.signature)
        }
    }

    @Test func negativeVectorsAreRejected() throws {
        let verifier = try StandardWebhooks(secret: sw1.secret)
        func verify(_ signatures: String?, id: String? = nil, timestamp: String? = nil, body: [UInt8]? = nil,
                    now: Int64? = nil) -> Result<Void, StandardWebhooks.Failure> {
            verifier.verify(id: id ?? sw1.id, timestamp: timestamp ?? "\(sw1.timestamp)", signatures: signatures,
                            body: body ?? sw1.body, now: now ?? sw1.timestamp)
        }
        func failure(_ result: Result<Void, StandardWebhooks.Failure>) -> StandardWebhooks.Failure? {
            if case .failure(let failure) = result { return failure }
            return nil
        }
        #expect(failure(verify("v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OA=")) == .noMatchingSignature)
        #expect(failure(verify("v1,Ceo5qEr07ixe2NLpvHk3FH9bwy/WavXrAFQ/9tdO6mc=")) == .noMatchingSignature)
        #expect(failure(verify("v1,")) == .noMatchingSignature)
        #expect(failure(verify(String(sw1.signature.prefix(8)))) == .noMatchingSignature)
        #expect(failure(verify(sw1.signature, body: Array(#"{"test": 2432232315}"#.utf8))) == .noMatchingSignature)
        #expect(failure(verify(sw1.signature, now: sw1.timestamp + 301)) == .timestampOutOfTolerance)
        #expect(failure(verify(sw1.signature, now: sw1.timestamp - 301)) == .timestampOutOfTolerance)
        #expect(failure(verify(sw1.signature, now: sw1.timestamp + 300)) == nil)
        #expect(failure(verify(sw1.signature, timestamp: "hello")) == .badTimestamp)
        #expect(failure(verify(nil)) == .missingHeaders)
        #expect(failure(verifier.verify(id: nil, timestamp: "1", signatures: "x", body: [], now: 1)) == .missingHeaders)
        let wrongSecret = try StandardWebhooks(secret: "whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD")
        #expect(failure(wrongSecret.verify(id: sw1.id, timestamp: "\(sw1.timestamp)", signatures: sw1.signature,
                                           body: sw1.body, now: sw1.timestamp)) == .noMatchingSignature)
        #expect(throws: StandardWebhooksSecretError.self) { try StandardWebhooks(secret: "") }
        #expect(throws: StandardWebhooksSecretError.self) { try StandardWebhooks(secret: "whsec_") }
    }

    @Test func oneMatchingSignatureAmongSeveralIsEnough() throws {
        let verifier = try StandardWebhooks(secret: sw1.secret)
        let header = "v1,Ceo5qEr07ixe2NLpvHk3FH9bwy/WavXrAFQ/9tdO6mc= v2,Ceo5qEr07ixe2NLpvHk3FH9bwy/WavXrAFQ/9tdO6mc= "
            + "\(sw1.signature) v1,Ceo5qEr07ixe2NLpvHk3FH9bwy/WavXrAFQ/9tdO6mc="
        #expect(throws: Never.self) {
            try verifier.verify(id: sw1.id, timestamp: "\(sw1.timestamp)", signatures: header, body: sw1.body,
                                now: sw1.timestamp).get()
        }
        let distractors = "v1,tFtCZ5RDCPxzWQRWXWPgrCgE2frDBe9gjpbWQxnVfsQ= v1,Mm7xgUVICxZfQ3bgf0h0Dof65L/IFx+PnZvnDWPCX6Q= "
            + "v1,9DfC1c3eeOrXB6w/5dIDydLNQaEyww5KalE5jLBZucE="
        if case .success = verifier.verify(id: sw1.id, timestamp: "\(sw1.timestamp)", signatures: distractors,
                                           body: sw1.body, now: sw1.timestamp) {
            Issue.record("distractor signatures must not verify")
        }
    }
}

@Suite(.timeLimit(.minutes(3))) struct PushTranslatorTests {
    private func jobs(_ data: String) throws -> [NewJob] {
        let body = #"{"notifications":[{"tokens":["t"],"platform":2,"content_available":true,"data":\#(data)}]}"#
        let request = try GorushRequest.parse(Array(body.utf8), maximumNotifications: 10).get()
        return PushTranslator.jobs(for: request.notifications[0], now: 1)
    }

    @Test func gorushFixturesMakeNoJobs() throws {
        let directory = fixtures.appendingPathComponent("gorush")
        for file in try FileManager.default.contentsOfDirectory(atPath: directory.path) where file.contains("-request-") {
            let body = try [UInt8](Data(contentsOf: directory.appendingPathComponent(file)))
            let request = try GorushRequest.parse(body, maximumNotifications: 100).get()
            #expect(request.notifications.flatMap { PushTranslator.jobs(for: $0, now: 1) }.isEmpty, "\(file)")
        }
    }

    @Test func orderPushesBecomeFetchesUpsertsOrAFullSync() throws {
        #expect(try jobs(#"{"type":"order.updated","order_id":12,"version":8}"#)
            == [NewJob(kind: .fetch, orderID: "12", version: 8, source: "push")])
        // FCM delivers every data value as a string.
        #expect(try jobs(#"{"order_id":"12","version":"9"}"#) == [NewJob(kind: .fetch, orderID: "12", version: 9, source: "push")])
        let upsert = try jobs(#"{"type":"order.created","order":"{\"id\":7,\"status\":\"created\",\"version\":1}"}"#)
        #expect(upsert.map(\.kind) == [.upsert])
        #expect(upsert.first?.order?.body == #"{"id":7,"status":"created","version":1}"#)
        let object = try jobs(#"{"type":"order.created","order":{"id":"8","status":"created","x":[1]}}"#)
        #expect(object.first?.order?.id == "8")
        #expect(try jobs(#"{"type":"orders.resync"}"#).map(\.kind) == [.fullSync])
        #expect(try jobs(#"{"type":"order.updated"}"#).map(\.kind) == [.fullSync], "an order push without an id")
        #expect(try jobs(#"{"type":"chat.message","text":"hi"}"#).isEmpty)
    }
}
