import Foundation
import SQLiteStore
import StoreModel
import OrdersAPI
import TestHarnesses
import Testing
import TestKit

/// The feed is served on its connection, ahead of the router (FeedRequestHandler): HTTP/1.1's rules
/// for the connection still hold around it. Raw sockets, since curl neither pipelines nor reuses a
/// connection on demand.
@Suite(.timeLimit(.minutes(3))) struct FeedConnectionTests {
    @Test func aFeedRequestPipelinedBehindAnotherIsAnsweredAfterItsAnswer() async throws {
        try await APIHarness.with(prepare: { store in
            try store.applyUpsert(try order(1, status: "created", version: 1))
        }) { api in
            let connection = try RawConnection(port: api.port)
            // Both requests in one segment: the feed request is read while the first is still being answered.
            connection.send("GET /v1/orders HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
                + "GET /v1/orders/stream HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            let text = await connection.read(through: "event: ready")
            let orders = try #require(text.range(of: #"{"seq":"#))
            let feedHead = try #require(text.range(of: "content-type: text/event-stream", options: .caseInsensitive))
            let snapshot = try #require(text.range(of: "event: snapshot"))
            #expect(orders.upperBound <= feedHead.lowerBound)
            #expect(feedHead.upperBound <= snapshot.lowerBound)
            #expect(text.components(separatedBy: "HTTP/1.1 200 OK").count == 3)
            // The feed's own head carries what Hummingbird's heads carry: Server and an HTTP Date.
            let feedResponse = text[feedHead.lowerBound...]
            #expect(feedResponse.range(of: "server: orderlive", options: .caseInsensitive) != nil)
            #expect(feedResponse.range(of: #"date: (Mon|Tue|Wed|Thu|Fri|Sat|Sun), \d{2} [A-Z][a-z]{2} \d{4} \d{2}:\d{2}:\d{2} GMT"#,
                                       options: [.regularExpression, .caseInsensitive]) != nil)
            #expect(api.server.hub.subscriberCount == 1)
        }
    }

    @Test func aRefusedFeedRequestIsAnsweredByItsRouteAndTheConnectionServesTheNextRequest() async throws {
        try await APIHarness.with(authentication: .bearer(tokens: ["feed-token-4711"])) { api in
            let connection = try RawConnection(port: api.port)
            connection.send("GET /v1/orders/stream HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer wrong-one\r\n\r\n"
                + "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            let text = await connection.read(through: #"{"status":"ok"}"#)
            let refused = try #require(text.range(of: "HTTP/1.1 401"))
            let healthy = try #require(text.range(of: #"{"status":"ok"}"#))
            #expect(refused.upperBound <= healthy.lowerBound)
            #expect(text.contains("wrong bearer token"))
            #expect(api.server.hub.subscriberCount == 0)
            // The router's refusals keep their shape: a bad query names the parameter.
            let badQuery = try await api.get("/v1/orders/stream?access_token=feed-token-4711&colour=red")
            #expect(badQuery.status == 400)
            #expect(badQuery.body.contains("colour"))
            #expect(!api.logs.text.contains("feed-token-4711"))
            #expect(!api.logs.text.contains("wrong-one"))
        }
    }

    @Test func aFeedThatEndsLeavesItsConnectionToTheNextRequestUnlessOneWasPipelinedBehindIt() async throws {
        try await APIHarness.with(hub: .init(subscriberBuffer: 2)) { api in
            // Two subscribers that read nothing (small receive windows), so both fall behind and are
            // cut off: the feed's end that leaves the connection open (no Connection: close).
            let plain = try RawConnection(port: api.port, receiveBuffer: 4_096)
            plain.send("GET /v1/orders/stream HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            #expect(await plain.readResponseHead().hasPrefix("HTTP/1.1 200"))
            let pipelined = try RawConnection(port: api.port, receiveBuffer: 4_096)
            pipelined.send("GET /v1/orders/stream HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
                + "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            #expect(await pipelined.readResponseHead().hasPrefix("HTTP/1.1 200"))
            #expect(await api.server.hub.subscriberCountChange(from: 1, within: .seconds(10)) == 2 || api.server.hub.subscriberCount == 2)
            let padding = String(repeating: "x", count: 2_000)
            // Until both are cut off. How much that takes depends on how far the kernel grows the
            // server's send buffers (up to tcp_wmem's 4 MB each here), which differs under the
            // parallel suite's load: the bound only stops a broken test.
            var page = 0
            while api.metric("orderlive_api_subscribers_cut_off_total") < 2, page < 1_000 {
                try api.store.applyPage(try (0..<20).map { index in
                    try order(page * 20 + index, status: "created", version: 1, extra: ["padding": padding])
                })
                page += 1
                _ = await api.server.hub.subscriberCountChange(from: 2, within: .milliseconds(50))
            }
            #expect(api.metric("orderlive_api_subscribers_cut_off_total") == 2, "after \(page) pages of 20 orders of 2 KB")
            // What the socket held, the overflow event, the end of the chunked body; then the
            // connection answers the next request.
            let ended = await plain.read(through: "\r\n0\r\n\r\n")
            #expect(ended.contains("event: overflow"))
            #expect(ended.hasSuffix("\r\n0\r\n\r\n"))
            plain.send("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            let next = await plain.read(through: #"{"status":"ok"}"#)
            #expect(next.hasPrefix("HTTP/1.1 200"))
            #expect(next.contains(#"{"status":"ok"}"#))
            // The request that waited behind the feed is not answered: the connection closes after the end.
            let (rest, closed) = await pipelined.readUntilClosed()
            #expect(closed)
            #expect(rest.contains("event: overflow"))
            #expect(rest.hasSuffix("\r\n0\r\n\r\n"))
            #expect(!rest.contains(#"{"status":"ok"}"#))
            #expect(api.server.hub.subscriberCount == 0)
        }
    }
}
