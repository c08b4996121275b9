import Foundation
import PushIngest
import Testing
import TestHarnesses
import WebhookSigning
import CurlHTTP
import StoreModel

/// What third-party clients found on the push listener's wire (issue 35): Svix's header names for the
/// Standard Webhooks scheme, and HTTP/1.0 answered in the framing HTTP/1.0 can read.
@Suite(.timeLimit(.minutes(3))) struct WireCompatibilityTests {
    // D-1 of shared/fixtures/standard-webhooks.md, with the clock at its timestamp.
    static let secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
    static let body = #"{"notifications":[{"tokens":["token_a"],"platform":1,"content_available":true,"push_type":"background","priority":"normal","topic":"com.example.app","data":{"type":"order.updated","order_id":"ord_123"}}]}"#
    static let id = "msg_2KWPBgLlAfxdpx2AI54pPJ85f4W"
    static let timestamp = "1674087231"
    static let signature = "v1,uureyaz5PL3qA70Qs/14Zt20aEc1Uu/UuPkN2kifNzU="

    @Test func svixHeaderNamesAreTheSameSchemeAndTheirIDIsTheIdempotencyKey() async throws {
        try await PushServerHarness.with(
            authentication: .standardWebhooks(try StandardWebhooks(secret: Self.secret)), now: { 1_674_087_231 }
        ) { harness in
            let svix = ["svix-id": Self.id, "svix-timestamp": Self.timestamp, "svix-signature": Self.signature]
            let accepted = try await harness.push(Self.body, headers: svix)
            #expect(accepted.status == 200, "\(accepted.text)")
            #expect(try harness.jobs().map(\.orderID) == ["ord_123"])
            // The same message under the standard names is the same message: a duplicate.
            let standard = ["webhook-id": Self.id, "webhook-timestamp": Self.timestamp, "webhook-signature": Self.signature]
            #expect(try await harness.push(Self.body, headers: standard).status == 200)
            #expect(try harness.jobs().count == 1)
            // Both names with the same value are one header; with different values, refused by name.
            var both = svix.merging(standard) { first, _ in first }
            #expect(try await harness.push(Self.body, headers: both).status == 200)
            both["svix-id"] = "msg_other"
            let conflicting = try await harness.push(Self.body, headers: both)
            #expect(conflicting.status == 401)
            #expect(conflicting.text.contains("webhook-id and svix-id differ"), "\(conflicting.text)")
            // A tampered body under Svix's names fails as under the standard ones.
            let tampered = try await harness.push(Self.body.replacingOccurrences(of: "ord_123", with: "ord_124"), headers: svix)
            #expect(tampered.status == 401)
            #expect(try harness.jobs().count == 1)
        }
    }

    @Test func anHTTP10RequestGetsAnHTTP10AnswerWithItsLengthAndTheConnectionCloses() async throws {
        try await PushServerHarness.with { harness in
            for path in ["/healthz", "/metrics", "/openapi.json", "/nowhere"] {
                let connection = try RawConnection(port: harness.port)
                connection.send("GET \(path) HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n")
                let (text, closed) = await connection.readUntilClosed()
                #expect(closed, "\(path): the connection stays open after an HTTP/1.0 response")
                let head = text.components(separatedBy: "\r\n\r\n").first?.lowercased() ?? ""
                #expect(head.hasPrefix("http/1.0 "), "\(path): \(head)")
                #expect(head.contains("content-length: "), "\(path): \(head)")
                #expect(!head.contains("transfer-encoding"), "\(path): \(head)")
                #expect(head.contains("connection: close"), "\(path): \(head)")
            }
            // A push over HTTP/1.0 is read by its Content-Length and answered the same way.
            let push = try RawConnection(port: harness.port)
            let body = #"{"notifications":[{"tokens":["a"],"platform":2,"data":{"order_id":"h10"}}]}"#
            push.send("POST /api/push HTTP/1.0\r\nContent-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)")
            let (answer, closed) = await push.readUntilClosed()
            #expect(closed)
            #expect(answer.hasPrefix("HTTP/1.0 200"), "\(answer)")
            #expect(answer.hasSuffix(#"{"counts":1,"logs":[],"success":"ok"}"#))
            #expect(try harness.jobs().map(\.orderID) == ["h10"])
        }
    }

    @Test func anHTTP10KeepAliveIsKeptAndConnectionCloseIsHonouredInAnyCase() async throws {
        try await PushServerHarness.with { harness in
            let connection = try RawConnection(port: harness.port)
            connection.send("GET /healthz HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
            let first = await connection.read(through: #"{"status":"ok"}"#)
            #expect(first.hasPrefix("HTTP/1.0 200"), "\(first)")
            #expect(first.lowercased().contains("connection: keep-alive"), "\(first)")
            // The same connection serves the next request; without keep-alive, it is the last.
            connection.send("GET /healthz HTTP/1.0\r\n\r\n")
            let (second, closed) = await connection.readUntilClosed()
            #expect(closed)
            #expect(second.hasPrefix("HTTP/1.0 200"), "\(second)")

            let eleven = try RawConnection(port: harness.port)
            eleven.send("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: Keep-Alive, Close\r\n\r\n")
            let (answer, elevenClosed) = await eleven.readUntilClosed()
            #expect(elevenClosed, "Connection: close in any case and position ends the connection")
            #expect(answer.hasPrefix("HTTP/1.1 200"))
            #expect(answer.lowercased().contains("connection: close"))
        }
    }
}
