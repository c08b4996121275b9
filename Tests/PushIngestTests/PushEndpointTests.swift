import CurlHTTP
import Foundation
import GRDB
import SQLiteStore
import StoreModel
import PushIngest
import Testing
import TestHarnesses
import WebhookSigning
import Logging
import TestKit

@Suite(.timeLimit(.minutes(3))) struct PushEndpointTests {
    private static let gorushDirectory = fixtures.appendingPathComponent("gorush")

    private static func fixtureBodies() throws -> [(String, [UInt8])] {
        try FileManager.default.contentsOfDirectory(atPath: gorushDirectory.path)
            .filter { $0.contains("-request-") }.sorted()
            .map { ($0, try [UInt8](Data(contentsOf: gorushDirectory.appendingPathComponent($0)))) }
    }

    private static func order(_ data: String, tokens: String = #"["t1"]"#) -> String {
        #"{"notifications":[{"tokens":\#(tokens),"platform":2,"content_available":true,"data":\#(data)}]}"#
    }

    @Test func everyGorushFixtureIsAcceptedWithItsCountsAndMakesNoJob() async throws {
        try await PushServerHarness.with { harness in
            let bodies = try Self.fixtureBodies()
            #expect(bodies.count >= 20)
            for (file, body) in bodies {
                let object = try JSONSerialization.jsonObject(with: Data(body)) as? [String: Any]
                let counts = (object?["notifications"] as? [[String: Any]] ?? []).reduce(0) {
                    $0 + (($1["tokens"] as? [Any])?.count ?? 0) + ((($1["topic"] as? String) ?? "").isEmpty ? 0 : 1)
                }
                let response = try await harness.push(body)
                #expect(response.status == 200, "\(file): \(response.text)")
                #expect(response.text == #"{"counts":\#(counts),"logs":[],"success":"ok"}"#, "\(file)")
            }
            #expect(try harness.jobs().isEmpty, "no Gorush example is about an order")
        }
    }

    @Test func orderPushesMakeTheirJobsAndOthersNone() async throws {
        try await PushServerHarness.with { harness in
            let bodies = [
                Self.order(#"{"type":"order.updated","order_id":12,"version":8}"#),
                Self.order(#"{"order_id":"13","version":"2"}"#),
                Self.order(#"{"type":"order.created","order":{"id":14,"status":"created","version":1}}"#),
                Self.order(#"{"type":"order.created","order":"{\"id\":15,\"status\":\"created\",\"version\":3}"}"#),
                Self.order(#"{"type":"orders.resync"}"#),
                Self.order(#"{"type":"chat.message","text":"hello"}"#),
            ]
            for body in bodies {
                let response = try await harness.push(body)
                #expect(response.status == 200)
                #expect(response.text == #"{"counts":1,"logs":[],"success":"ok"}"#)
            }
            // The full sync makes the pending fetches before it redundant (DESIGN §8).
            let jobs = try harness.jobs()
            #expect(jobs.map(\.kind) == [.upsert, .upsert, .fullSync])
            #expect(jobs.map(\.orderID) == ["14", "15", nil])
            #expect(jobs[1].order?.body == #"{"id":15,"status":"created","version":3}"#)
            #expect(jobs.allSatisfy { $0.source == "push" })
        }
        try await PushServerHarness.with { harness in
            _ = try await harness.push(Self.order(#"{"type":"order.updated","order_id":12,"version":8}"#))
            _ = try await harness.push(Self.order(#"{"order_id":"13","version":"2"}"#))
            let jobs = try harness.jobs()
            #expect(jobs.map(\.kind) == [.fetch, .fetch])
            #expect(jobs.map(\.orderID) == ["12", "13"])
            #expect(jobs.map(\.version) == [8, 2])
        }
    }

    @Test func gorushBadRequestsAnswerItsExactBodies() async throws {
        try await PushServerHarness.with(maximumNotifications: 2) { harness in
            let cases: [(String, String)] = [
                ("not json", "Missing notifications field."),
                ("{}", "Missing notifications field."),
                (#"{"notifications":[]}"#, "Notifications field is empty."),
                (#"{"notifications":[{},{},{}]}"#, "Number of notifications(3) over limit(2)"),
                (#"{"notifications":[{"tokens":["a"],"platform":"1"}]}"#, "Missing notifications field."),
                (#"{"notifications":[{"tokens":["a"],"content_available":1}]}"#, "Missing notifications field."),
                ("", "Missing notifications field."),
            ]
            for (body, message) in cases {
                let response = try await harness.push(body)
                #expect(response.status == 400, "\(body)")
                #expect(response.text == #"{"code":400,"message":"\#(message)"}"#, "\(body)")
            }
            #expect(try harness.jobs().isEmpty)
        }
    }

    @Test func aDeclaredOversizeBodyIsRefusedWithoutBeingRead() async throws {
        try await PushServerHarness.with(maximumBodyBytes: 1024) { harness in
            // Declares 10 MB and sends only 2 KB: an answer proves the server did not wait for the rest.
            let connection = try RawConnection(port: harness.port)
            connection.send("POST /api/push HTTP/1.1\r\nHost: x\r\nContent-Length: 10000000\r\n\r\n")
            connection.send(bytes: [UInt8](repeating: 0x20, count: 2048))
            let (answer, closed) = await connection.readUntilClosed()
            #expect(answer.hasPrefix("HTTP/1.1 413"), "\(answer)")
            #expect(answer.contains("ingest.max_body_bytes"))
            #expect(closed, "the connection is closed instead of reading 10 MB")
            // Through curl, with a real body over the limit.
            let response = try await harness.push([UInt8](repeating: 0x20, count: 300_000))
            #expect(response.status == 413)
            #expect(try harness.jobs().isEmpty)
        }
    }

    @Test func aChunkedOversizeBodyIsRefusedWhileItIsCounted() async throws {
        try await PushServerHarness.with(maximumBodyBytes: 1024) { harness in
            let connection = try RawConnection(port: harness.port)
            connection.send("POST /api/push HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n")
            let chunk = "200\r\n" + String(repeating: " ", count: 512) + "\r\n"
            for _ in 0..<3 { connection.send(chunk) }
            // No terminating chunk: the answer must come from counting, not from the end of the body.
            let (answer, closed) = await connection.readUntilClosed()
            #expect(answer.hasPrefix("HTTP/1.1 413"), "\(answer)")
            #expect(closed)
        }
    }

    @Test func aBodyThatStallsTimesOutWith408() async throws {
        try await PushServerHarness.with(readTimeout: .milliseconds(300)) { harness in
            let connection = try RawConnection(port: harness.port)
            connection.send("POST /api/push HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{\"notif")
            let (answer, closed) = await connection.readUntilClosed()
            #expect(answer.hasPrefix("HTTP/1.1 408"), "\(answer)")
            #expect(closed)
            #expect(try harness.jobs().isEmpty)
        }
    }

    @Test func aHeadThatNeverEndsIsClosed() async throws {
        try await PushServerHarness.with(readTimeout: .milliseconds(300)) { harness in
            let connection = try RawConnection(port: harness.port)
            connection.send("POST /api/push HTTP/1.1\r\nHost: x\r\nX-Slow: ")
            let (answer, closed) = await connection.readUntilClosed()
            #expect(answer.isEmpty)
            #expect(closed, "a head that does not arrive within the read timeout closes the connection")
            // The server still answers everyone else.
            #expect(try await harness.get("/healthz").status == 200)
        }
    }

    @Test func standardWebhooksSignaturesAreCheckedOnTheRawBody() async throws {
        // D-1 of shared/fixtures/standard-webhooks.md, with the clock at its timestamp.
        let secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
        let body = #"{"notifications":[{"tokens":["token_a"],"platform":1,"content_available":true,"push_type":"background","priority":"normal","topic":"com.example.app","data":{"type":"order.updated","order_id":"ord_123"}}]}"#
        let signed = ["webhook-id": "msg_2KWPBgLlAfxdpx2AI54pPJ85f4W", "webhook-timestamp": "1674087231",
                      "webhook-signature": "v1,uureyaz5PL3qA70Qs/14Zt20aEc1Uu/UuPkN2kifNzU="]
        func with(_ changes: [String: String?]) -> [String: String] {
            var headers = signed
            for (name, value) in changes { headers[name] = value }
            return headers
        }
        try await PushServerHarness.with(
            authentication: .standardWebhooks(try StandardWebhooks(secret: secret)), now: { 1_674_087_231 }
        ) { harness in
            let refused: [(String, [String: String], String)] = [
                ("tampered body", signed, body.replacingOccurrences(of: "ord_123", with: "ord_124")),
                ("missing signature", with(["webhook-signature": nil]), body),
                ("missing id", with(["webhook-id": nil]), body),
                ("missing timestamp", with(["webhook-timestamp": nil]), body),
                ("301 s old", with(["webhook-timestamp": "1674086930"]), body),
                ("301 s ahead", with(["webhook-timestamp": "1674087532"]), body),
                ("not a time", with(["webhook-timestamp": "hello"]), body),
                ("partial signature", with(["webhook-signature": "v1,"]), body),
                ("truncated signature", with(["webhook-signature": "v1,uureyaz5"]), body),
                ("other scheme", with(["webhook-signature": "v2,uureyaz5PL3qA70Qs/14Zt20aEc1Uu/UuPkN2kifNzU="]), body),
                ("garbage", with(["webhook-signature": "%%%"]), body),
            ]
            for (name, headers, text) in refused {
                let response = try await harness.push(text, headers: headers)
                #expect(response.status == 401, "\(name)")
                #expect(response.text.hasPrefix(#"{"code":401,"message":"authentication failed: "#), "\(name)")
            }
            #expect(try harness.jobs().isEmpty, "a refused body is never parsed into jobs")
            let several = with(["webhook-signature":
                "v1,Ceo5qEr07ixe2NLpvHk3FH9bwy/WavXrAFQ/9tdO6mc= v1,uureyaz5PL3qA70Qs/14Zt20aEc1Uu/UuPkN2kifNzU="])
            let accepted = try await harness.push(body, headers: several)
            #expect(accepted.status == 200, "\(accepted.text)")
            #expect(try harness.jobs().map(\.orderID) == ["ord_123"])
            let metrics = try await harness.get("/metrics").text
            #expect(metrics.contains("orderlive_push_auth_failures_total 11"), "\(metrics)")
            #expect(!harness.logs.text.contains("MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"))
        }
        // The same headers against the wrong secret.
        try await PushServerHarness.with(
            authentication: .standardWebhooks(try StandardWebhooks(secret: "whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD")),
            now: { 1_674_087_231 }
        ) { harness in
            let response = try await harness.push(body, headers: signed)
            #expect(response.status == 401)
        }
    }

    @Test func bearerTokensAreRequiredAndNeverLogged() async throws {
        let secret = "s3cret-bearer-token-for-tests"
        try await PushServerHarness.with(authentication: .bearer(secret: secret)) { harness in
            let body = Self.order(#"{"order_id":1}"#)
            for headers in [[:], ["Authorization": "Bearer wrong"], ["Authorization": "Basic \(secret)"],
                            ["Authorization": "Bearer \(secret)x"], ["Authorization": "Bearer "]] {
                let response = try await harness.push(body, headers: headers)
                #expect(response.status == 401, "\(headers)")
                #expect(!response.text.contains(secret))
            }
            #expect(try harness.jobs().isEmpty)
            #expect(try await harness.push(body, headers: ["Authorization": "Bearer \(secret)"]).status == 200)
            #expect(try harness.jobs().count == 1)
            #expect(!harness.logs.text.contains(secret), "a secret never reaches a log")
        }
    }

    @Test func aResentPushIsOneJobAndAReusedIDForOtherContentIsNeverDroppedSilently() async throws {
        try await PushServerHarness.with { harness in
            let body = Self.order(#"{"order_id":21}"#, tokens: #"["a","b"]"#)
            let first = try await harness.push(body, headers: ["webhook-id": "msg_1"])
            let resent = try await harness.push(body, headers: ["webhook-id": "msg_1"])
            #expect(first.status == 200)
            #expect(resent.status == 200)
            #expect(resent.text == first.text, "a resent request is answered as before")
            #expect(try harness.jobs().map(\.orderID) == ["21"])
            // The same webhook-id for another body: 409 naming the id, and nothing of it applied.
            let reused = try await harness.push(Self.order(#"{"order_id":22}"#), headers: ["webhook-id": "msg_1"])
            #expect(reused.status == 409)
            #expect(reused.text.contains("webhook-id 'msg_1'") && reused.text.contains("new id"), "\(reused.text)")
            #expect(try harness.jobs().map(\.orderID) == ["21"])

            // A notif_id: the same notification again is a duplicate; another one under it is applied.
            func notification(_ order: Int) -> String {
                #"{"notifications":[{"tokens":["a"],"platform":1,"notif_id":"n-7","data":{"order_id":\#(order)}}]}"#
            }
            #expect(try await harness.push(notification(23)).status == 200)
            #expect(try await harness.push(notification(23)).status == 200)
            #expect(try harness.jobs().map(\.orderID) == ["21", "23"])
            #expect(try await harness.push(notification(24)).status == 200)
            #expect(try harness.jobs().map(\.orderID) == ["21", "23", "24"], "a reused notif_id must not drop an update")
            // The first content again is still known as a duplicate.
            #expect(try await harness.push(notification(23)).status == 200)
            #expect(try harness.jobs().map(\.orderID) == ["21", "23", "24"])
            let metrics = try await harness.get("/metrics").text
            #expect(metrics.contains("orderlive_push_duplicates_total 3"), "\(metrics)")
            #expect(metrics.contains("orderlive_push_reused_notif_ids_total 1"))
            #expect(metrics.contains(#"orderlive_push_requests_total{outcome="reused_id"} 1"#))
        }
    }

    @Test func aRequestWhoseCommitFailsLeavesNoPartialJobs() async throws {
        try await PushServerHarness.with(prepare: { store in
            // A real SQLite failure in the middle of the request's transaction.
            let queue = try DatabaseQueue(path: store.path)
            try queue.write { db in
                try db.execute(sql: """
                    CREATE TRIGGER poison BEFORE INSERT ON job WHEN NEW.order_id = 'poison'
                    BEGIN SELECT RAISE(ABORT, 'the disk refused'); END;
                    """)
            }
        }) { harness in
            let body = #"{"notifications":[{"tokens":["a"],"platform":1,"notif_id":"n-1","data":{"order_id":31}},"#
                + #"{"tokens":["a"],"platform":1,"data":{"order_id":"poison"}}]}"#
            let response = try await harness.push(body, headers: ["webhook-id": "msg_poison"])
            #expect(response.status == 503)
            #expect(response.head.headers["Retry-After"] == "1")
            #expect(try harness.jobs().isEmpty, "neither notification's job, nor its dedupe key")
            // Nothing was remembered: once the fault is gone, the same request is accepted in full.
            let clean = body.replacingOccurrences(of: "poison", with: "32")
            #expect(try await harness.push(clean, headers: ["webhook-id": "msg_poison"]).status == 200)
            #expect(try harness.jobs().map(\.orderID) == ["31", "32"])
        }
    }

    @Test func overTheHighWaterMarkPushesAre429AndNothingIsAccepted() async throws {
        try await PushServerHarness.with(highWaterJobs: 2, prepare: { store in
            try store.journal([NewJob(kind: .fetch, orderID: "1", source: "stream"),
                               NewJob(kind: .fetch, orderID: "2", source: "stream")])
        }) { harness in
            let response = try await harness.push(Self.order(#"{"order_id":41}"#), headers: ["webhook-id": "msg_41"])
            #expect(response.status == 429)
            #expect(response.head.headers["Retry-After"] == "5")
            #expect(response.text.contains("ingest.high_water_jobs"))
            #expect(try harness.jobs().map(\.orderID) == ["1", "2"])
        }
    }

    @Test func duringShutdownPushesAre503WithRetryAfter() async throws {
        try await PushServerHarness.with { harness in
            harness.endpoint.beginDraining()
            let response = try await harness.push(Self.order(#"{"order_id":51}"#))
            #expect(response.status == 503)
            #expect(response.head.headers["Retry-After"] == "5")
            #expect(try harness.jobs().isEmpty)
            #expect(try await harness.get("/healthz").status == 200)
        }
    }

    @Test func twoThousandConcurrentPushesAreEachJournaledOnce() async throws {
        try await PushServerHarness.with { harness in
            let clients = 4
            let perClient = 500
            let statuses = try await withThrowingTaskGroup(of: [Int].self) { group in
                for client in 0..<clients {
                    group.addTask {
                        try await CurlLoop.withLoop(logger: .init(label: "client")) { loop in
                            try await withThrowingTaskGroup(of: Int.self) { requests in
                                for lane in 0..<10 {
                                    requests.addTask {
                                        var last = 0
                                        for index in stride(from: lane, to: perClient, by: 10) {
                                            let id = client * perClient + index
                                            // Every tenth push is sent twice, as a retrying sender would.
                                            for _ in 0..<(id % 10 == 0 ? 2 : 1) {
                                                let response = try await loop.perform(HTTPRequest(
                                                    url: harness.url, method: "POST", headers: ["webhook-id": "msg-\(id)"],
                                                    body: Array(Self.order(#"{"order_id":\#(id)}"#).utf8)))
                                                last = response.status == 200 ? last : response.status
                                            }
                                        }
                                        return last
                                    }
                                }
                                return try await requests.reduce(into: []) { $0.append($1) }
                            }
                        }
                    }
                }
                return try await group.reduce(into: [Int]()) { $0 += $1 }
            }
            #expect(statuses.allSatisfy { $0 == 0 }, "every push answered 200")
            let ids = try harness.jobs().compactMap(\.orderID)
            #expect(ids.count == clients * perClient)
            #expect(Set(ids).count == clients * perClient, "none twice")
        }
    }

    @Test func metricsAreValidPrometheusTextAndCountOutcomes() async throws {
        try await PushServerHarness.with { harness in
            _ = try await harness.push(Self.order(#"{"order_id":61}"#))
            _ = try await harness.push("{}")
            let response = try await harness.get("/metrics")
            #expect(response.status == 200)
            #expect(response.head.headers["Content-Type"]?.hasPrefix("text/plain; version=0.0.4") == true)
            let text = response.text
            #expect(text.contains(#"orderlive_push_requests_total{outcome="accepted"} 1"#), "\(text)")
            #expect(text.contains(#"orderlive_push_requests_total{outcome="bad_request"} 1"#))
            #expect(text.contains("orderlive_push_jobs_total 1"))
            #expect(text.contains("orderlive_push_notifications_total 1"))
            #expect(text.contains("orderlive_push_request_duration_seconds_count 2"))
            for line in text.split(separator: "\n") where !line.hasPrefix("#") {
                // name{labels} value — one sample per line.
                #expect(line.split(separator: " ").count == 2, "\(line)")
            }
            #expect(try await harness.get("/readyz").status == 200)
            #expect(try await harness.get("/api/status").text == #"{"test":true}"#)
        }
    }

    @Test func unauthenticatedPushesAreAllowedOnlyOnLoopback() {
        #expect(PushServer.refusal(host: "127.0.0.1", authentication: .none) == nil)
        #expect(PushServer.refusal(host: "localhost", authentication: .none) == nil)
        #expect(PushServer.refusal(host: "::1", authentication: .none) == nil)
        #expect(PushServer.refusal(host: "0.0.0.0", authentication: .none)?.contains("ingest.auth") == true)
        #expect(PushServer.refusal(host: "0.0.0.0", authentication: .bearer(secret: "x")) == nil)
    }
}
