import Foundation
import SQLiteStore
import StoreModel
import OrdersAPI
import TestHarnesses
import Testing

/// What third-party SSE clients and proxies found on the change feed's wire (issue 35): heartbeats at
/// the configured interval, HTTP/1.0 answered close-delimited, an empty id treated as no id.
@Suite(.timeLimit(.minutes(3))) struct FeedWireTests {
    @Test func anHTTP10FeedIsCloseDelimitedWithoutChunksAndEndsWithTheConnection() async throws {
        try await APIHarness.with(hub: .init(heartbeat: .milliseconds(300)), prepare: { store in
            try store.applyUpsert(try order(1, status: "created", version: 1))
        }) { api in
            let connection = try RawConnection(port: api.port)
            connection.send("GET /v1/orders/stream HTTP/1.0\r\n\r\n")
            let start = await connection.read(through: "event: ready")
            let parts = start.components(separatedBy: "\r\n\r\n")
            let head = parts[0].lowercased()
            #expect(head.hasPrefix("http/1.0 200"), "\(head)")
            #expect(head.contains("connection: close"), "\(head)")
            #expect(!head.contains("transfer-encoding"), "\(head)")
            #expect(!head.contains("content-length"), "\(head)")
            // The body starts with the events themselves: no chunk-size line.
            let body = parts.dropFirst().joined(separator: "\r\n\r\n")
            // (A heartbeat may come first on a loaded machine; it is written as it is, too.)
            var events = Substring(body)
            while events.hasPrefix(": heartbeat\n\n") { events = events.dropFirst(": heartbeat\n\n".count) }
            #expect(events.hasPrefix("retry: 1000\n\nevent: snapshot\n"), "\(body.prefix(80))")
            // Live changes and heartbeats are written as they are, too.
            try api.store.applyUpsert(try order(1, status: "assigned", version: 2))
            var live = await connection.read(through: "event: order.upserted")
            live += await connection.read(through: ": heartbeat")
            #expect(live.contains("event: order.upserted\n"))
            #expect(!live.contains("\r\n"), "chunk framing in an HTTP/1.0 body: \(live.debugDescription)")
            // The agent stops the feed: its connection's close is the end of the body.
            api.server.hub.close()
            let (rest, closed) = await connection.readUntilClosed()
            #expect(closed)
            #expect(!rest.contains("\r\n"), "\(rest.debugDescription)")
        }
    }

    @Test func anEmptyLastEventIDOrSinceIsNoIDAtAll() async throws {
        try await APIHarness.with(prepare: { store in
            try store.applyUpsert(try order(1, status: "created", version: 1))
        }) { api in
            // Raw requests: curl drops a header whose value is empty instead of sending it.
            for (target, header) in [("/v1/orders/stream", "Last-Event-ID:\r\n"), ("/v1/orders/stream?since=", ""),
                                     ("/v1/orders/stream?since=", "Last-Event-ID:  \r\n")] {
                let connection = try RawConnection(port: api.port)
                connection.send("GET \(target) HTTP/1.1\r\nHost: 127.0.0.1\r\n\(header)\r\n")
                let text = await connection.read(through: "event: ready")
                #expect(text.contains("event: snapshot\n") && text.contains("event: ready\n"), "\(target) \(header)")
                #expect(!text.contains("event: reset"), "\(target) \(header): \(text)")
            }
            #expect(api.metric(#"orderlive_api_feed_starts_total{outcome="new"}"#) == 3)
            #expect(api.metric(#"orderlive_api_feed_starts_total{outcome="reset"}"#) == 0)
        }
    }
}

/// Heartbeat gaps measured on a real socket: a timing test, so `make test` runs it on its own after
/// the rest (`--skip HeartbeatGapTests`, then `--filter HeartbeatGapTests`).
@Suite(.timeLimit(.minutes(3))) struct HeartbeatGapTests {
    /// The gaps between the heartbeats of an idle feed, on a real socket. Before, a heartbeat written
    /// counted as "something sent", so every other tick was skipped: gaps of twice the interval, which
    /// a proxy with an idle timeout of twice the interval cuts. The median gap is compared, so a stall
    /// of the loaded machine (one long gap, then a short one) does not decide it; the exact timing is
    /// FeedHeartbeatTests' on an embedded loop. `make test` runs this suite alone, after the parallel
    /// suite, whose load starves event loops for a second at a time.
    @Test func anIdleFeedGetsAHeartbeatEveryIntervalAndOneIntervalAfterAChange() async throws {
        let interval = Duration.milliseconds(500)
        try await APIHarness.with(hub: .init(heartbeat: interval)) { api in
            let connection = try RawConnection(port: api.port)
            connection.send("GET /v1/orders/stream HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            #expect(await connection.read(through: "event: ready").contains("event: ready"))
            var arrivals: [ContinuousClock.Instant] = []
            for _ in 0..<7 {
                #expect(await connection.read(through: ": heartbeat").contains(": heartbeat"))
                arrivals.append(.now)
            }
            let gaps = zip(arrivals, arrivals.dropFirst()).map { $1 - $0 }.sorted()
            let median = gaps[gaps.count / 2]
            #expect(median > .milliseconds(350) && median < .milliseconds(700), "gaps \(gaps)")

            // After a change, the next heartbeat comes one interval after that write, not up to two.
            var after: [Duration] = []
            for version in 1...3 {
                try api.store.applyUpsert(try order(1, status: "created", version: version))
                #expect(await connection.read(through: "event: order.upserted").contains("order.upserted"))
                let changed = ContinuousClock.now
                #expect(await connection.read(through: ": heartbeat").contains(": heartbeat"))
                after.append(ContinuousClock.now - changed)
            }
            #expect(after.sorted()[1] < .milliseconds(850), "after each change: \(after)")
        }
    }
}
