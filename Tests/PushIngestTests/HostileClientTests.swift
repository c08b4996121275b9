import CoreMetrics
import CurlHTTP
import Foundation
import LocalHTTP
import PushIngest
import TestHarnesses
import TestKit
import Testing
import InMemoryLogging
import Logging

#if canImport(Glibc)
import Glibc
import WebhookSigning
#endif

/// Issue 11: hostile input against the real listener. Whatever a client sends, the agent stays up
/// and the next well-formed request is served.
@Suite(.timeLimit(.minutes(3))) struct HostileClientTests {
    private static let secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
    private static let body = #"{"notifications":[{"tokens":["t"],"platform":2}]}"#

    private static func failure(_ result: Result<Void, StandardWebhooks.Failure>) -> StandardWebhooks.Failure? {
        if case .failure(let failure) = result { return failure }
        return nil
    }

    /// A server that still answers: `/healthz` 200 and a well-formed push accepted.
    private func stillServes(_ harness: PushServerHarness, _ what: String) async throws {
        let health = try await harness.get("/healthz")
        #expect(health.status == 200, "after \(what)")
    }

    @Test func theWebhookTimestampThatStoppedTheAgentIs401BadTimestamp() async throws {
        // The exact request of the issue: no valid signature, no secret, Int64.min as the timestamp.
        try await PushServerHarness.with(
            authentication: .standardWebhooks(try StandardWebhooks(secret: Self.secret)), now: { 1_674_087_231 }
        ) { harness in
            let response = try await harness.push(Self.body, headers: [
                "webhook-id": "msg_1", "webhook-timestamp": "-9223372036854775808", "webhook-signature": "v1,AAAA",
            ])
            #expect(response.status == 401)
            #expect(response.text.contains("webhook-timestamp is not a Unix time"), "\(response.text)")
            try await stillServes(harness, "Int64.min timestamp")
        }
    }

    @Test func everyEdgeTimestampIsRefusedBeforeAnyArithmetic() async throws {
        let verifier = try StandardWebhooks(secret: Self.secret)
        let edges = [
            "-9223372036854775808", "9223372036854775807", "9223372036854775808", "18446744073709551616", "1e308",
            "NaN", " ", "0x10", "+1674087231", " 1674087231", "1674087231.5", "-1", "253402300800",
        ]
        for timestamp in edges {
            let result = verifier.verify(id: "msg_1", timestamp: timestamp, signatures: "v1,AAAA",
                                         body: Array(Self.body.utf8), now: 1_674_087_231)
            #expect(Self.failure(result) == .badTimestamp, "\(timestamp)")
        }
        // A well-formed but distant time is "out of tolerance", with the clock at either end of Int64.
        for now in [Int64.min, Int64.max, 0] {
            let result = verifier.verify(id: "msg_1", timestamp: "1674087231", signatures: "v1,AAAA",
                                         body: Array(Self.body.utf8), now: now)
            #expect(Self.failure(result) == .timestampOutOfTolerance, "now \(now)")
        }
        #expect(Self.failure(verifier.verify(id: "msg_1", timestamp: "", signatures: "v1,AAAA", body: [], now: 0))
            == .missingHeaders)
    }

    @Test func headerLinesOfAMegabyteAndTenThousandHeadersAreRefused() async throws {
        try await PushServerHarness.with { harness in
            let longLine = try RawConnection(port: harness.port)
            longLine.send("POST /api/push HTTP/1.1\r\nHost: x\r\nX-Long: " + String(repeating: "a", count: 1 << 20)
                + "\r\nContent-Length: 2\r\n\r\n{}")
            let first = await longLine.readUntilClosed()
            #expect(first.closed, "a 1 MB header line must end the connection")
            #expect(!first.text.hasPrefix("HTTP/1.1 200"), "\(first.text.prefix(80))")
            try await stillServes(harness, "a 1 MB header line")

            let many = try RawConnection(port: harness.port)
            var head = "POST /api/push HTTP/1.1\r\nHost: x\r\n"
            for index in 0..<10_000 { head += "X-H\(index): v\r\n" }
            many.send(head + "Content-Length: 2\r\n\r\n{}")
            let second = await many.readUntilClosed()
            #expect(second.closed, "10,000 headers must end the connection")
            #expect(!second.text.hasPrefix("HTTP/1.1 200"), "\(second.text.prefix(80))")
            try await stillServes(harness, "10,000 headers")
            #expect(try harness.jobs().isEmpty)
        }
    }

    @Test(arguments: [
        "Transfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n",
        "Transfer-Encoding: chunked\r\n\r\nffffffffffffffffffff\r\n{}\r\n0\r\n\r\n",
        "Transfer-Encoding: chunked\r\n\r\n-5\r\n{}\r\n0\r\n\r\n",
        "Transfer-Encoding: chunked\r\n\r\n2\r\n{}XX0\r\n\r\n",
        "Content-Length: -1\r\n\r\n{}",
        "Content-Length: 99999999999999999999999999\r\n\r\n{}",
        "Content-Length: 9223372036854775807\r\n\r\n{}",
        "Content-Length: 0x10\r\n\r\n{}",
        "Content-Length: 2\r\nContent-Length: 3\r\n\r\n{}",
        "Content-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n{}",
    ])
    func malformedFramingNeverReachesTheEndpointAndTheServerStaysUp(_ rest: String) async throws {
        try await PushServerHarness.with(readTimeout: .seconds(2)) { harness in
            let connection = try RawConnection(port: harness.port)
            connection.send("POST /api/push HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n" + rest)
            let answer = await connection.readUntilClosed()
            #expect(!answer.text.hasPrefix("HTTP/1.1 200"), "\(answer.text.prefix(120))")
            #expect(try harness.jobs().isEmpty)
            try await stillServes(harness, rest)
        }
    }

    @Test func binaryGarbageIsDroppedAndTheServerStaysUp() async throws {
        try await PushServerHarness.with(readTimeout: .seconds(2)) { harness in
            var generator = SplitMix(state: 11)
            for round in 0..<20 {
                let connection = try RawConnection(port: harness.port)
                let count = 1 + Int(generator.next() % 8_192)
                connection.send(bytes: (0..<count).map { _ in UInt8(truncatingIfNeeded: generator.next()) })
                let answer = await connection.readUntilClosed()
                #expect(!answer.text.hasPrefix("HTTP/1.1 200"), "round \(round)")
            }
            try await stillServes(harness, "binary garbage")
        }
    }

    @Test func aListenerFullOfRequestsInProgressRefusesANewConnectionAtOnceAndCountsIt() async throws {
        // A long read timeout keeps the eight requests in progress however slowly a loaded machine runs this.
        try await PushServerHarness.with(readTimeout: .seconds(600), maximumConnections: 8) { harness in
            // Eight connections, each in the middle of a request (a head whose body never comes).
            var held: [RawConnection] = []
            for _ in 0..<8 {
                let connection = try RawConnection(port: harness.port)
                connection.send("POST /api/push HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{")
                held.append(connection)
            }
            try await waitUntil { harness.server.admission.current == 8 }
            // A ninth is closed at once, unanswered: nobody may be evicted for it.
            let refused = try RawConnection(port: harness.port)
            refused.send("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
            let answer = await refused.readUntilClosed()
            #expect(answer.closed && answer.text.isEmpty, "over the limit: closed without an answer, got \(answer)")
            // One held connection leaves, and the place is free again.
            held.removeFirst()
            var metrics: HTTPResponse?
            for _ in 0..<500 where metrics == nil {
                // The server gives the place back on its event loop; the next connect may just precede it.
                metrics = try? await harness.get("/metrics")
            }
            let text = try #require(metrics).text
            let samples = try #require(prometheusSamples(text))
            #expect((samples["orderlive_push_connections_refused_total"] ?? 0) >= 1, "\(text)")
            #expect(harness.logs.entries("push listener full: refusing new connections").first?.level == .warning)
            held.removeAll()
        }
    }

    @Test func aListenerFullOfIdleConnectionsClosesTheOldestForARealRequest() async throws {
        try await PushServerHarness.with(readTimeout: .seconds(600), maximumConnections: 8) { harness in
            // Four connections that sent nothing, then four that were answered and sit idle.
            // One at a time, each admitted before the next connects: the listener's event loops
            // may accept connections made at once in any order.
            var held: [RawConnection] = []
            for index in 0..<4 {
                held.append(try RawConnection(port: harness.port))
                try await waitUntil { harness.server.admission.current == index + 1 }
            }
            for _ in 0..<4 {
                let connection = try RawConnection(port: harness.port)
                connection.send("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
                #expect(await connection.readResponseHead().hasPrefix("HTTP/1.1 200"))
                held.append(connection)
            }
            try await waitUntil { harness.server.admission.current == 8 }
            // A real push gets through: the oldest silent connection makes room.
            let push = try await harness.push(#"{"notifications":[{"tokens":["t"],"platform":2,"data":{"order_id":7}}]}"#)
            #expect(push.status == 200, "\(push.text)")
            #expect(await held[0].readUntilClosed().closed, "the oldest connection without a head was closed for it")
            // The listener stays full, and the rest still work.
            held[5].send("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
            #expect(await held[5].readResponseHead().hasPrefix("HTTP/1.1 200"))
            held.removeAll()
        }
    }

    /// Two agents started at once both pass the start-up check; the one that loses the bind must end
    /// with the same error, naming the key, not with the raw `bind(...) (errno 98)`.
    @Test func aLostBindRaceIsTheErrorThatNamesTheKey() async throws {
        try await PushServerHarness.with { harness in
            let journal = PushJournal(store: harness.store, dedupeWindow: .seconds(60), highWaterJobs: 100)
            let second = PushServer(
                configuration: PushServer.settings(port: harness.port),
                endpoint: PushEndpoint(configuration: .init(authentication: .none), journal: journal,
                                       metrics: PushMetrics(factory: NOOPMetricsHandler.instance), logger: quietLogger),
                operations: TestOperations(registry: harness.registry), logger: quietLogger)
            do {
                try await second.run()
                Issue.record("a second server bound the same port")
            } catch let failure as ListenFailure {
                #expect(failure.description
                    == "cannot listen on 127.0.0.1:\(harness.port) ('ingest.listen'): the port is in use; stop what holds it or choose another address")
            }
        }
    }

    /// Polls `condition` (a server-side count that moves on its event loop) for up to 10 s.
    private func waitUntil(_ condition: @Sendable () -> Bool) async throws {
        for _ in 0..<1_000 where !condition() { try await Task.sleep(for: .milliseconds(10)) }
        #expect(condition())
    }
}
