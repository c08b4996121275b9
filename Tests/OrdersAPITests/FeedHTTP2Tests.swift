import Foundation
import LocalHTTP
import OrdersAPI
import SQLiteStore
import StoreModel
import TestHarnesses
import Testing
import TestKit

/// The change feed on HTTP/2 streams (issue 57): twenty feeds multiplexed by libcurl on one `h2`
/// connection (TLS with ALPN), each with its snapshot, live changes and heartbeats, and closing one
/// stream leaves the others on the connection alive — what a dispatcher's twenty board tabs do.
@Suite(.timeLimit(.minutes(3))) struct FeedHTTP2Tests {
    static func certificates() async throws -> (directory: String, tls: ListenerTLS, ca: String) {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("orderlive-h2feed-\(UUID().uuidString)").path
        let ca = try await TestCertificateAuthority.make("depot", in: directory)
        let server = try await ca.issue("api.example")
        let tls = try ListenerTLS(TLSFiles(certificateFile: server.certificate, keyFile: server.key, section: "api.tls"))
        return (directory, tls, ca.certificate)
    }

    /// The hub's subscriber count once it is `count`, or what it is after 20 s.
    static func subscribers(_ api: APIHarness, reach count: Int) async -> Int {
        let clock = ContinuousClock()
        let deadline = clock.now.advanced(by: .seconds(20))
        while api.server.hub.subscriberCount != count, clock.now < deadline {
            _ = await api.server.hub.subscriberCountChange(from: api.server.hub.subscriberCount, within: .seconds(1))
        }
        return api.server.hub.subscriberCount
    }

    @Test func twentyFeedsShareOneHTTP2ConnectionEachLiveWithHeartbeats() async throws {
        let (directory, tls, ca) = try await Self.certificates()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try await APIHarness.with(hub: .init(heartbeat: .seconds(1)), prepare: { store in
            try store.applyUpsert(try order(1, status: "created", version: 1))
        }, tls: (tls, ca)) { api in
            // The first stream opens the connection; libcurl multiplexes the others onto it.
            var feeds: [FeedReader] = []
            for _ in 0..<20 {
                let feed = try await api.feed()
                #expect(feed.status == 200)
                let opening = try await feed.events(through: "ready")
                #expect(opening.first?.type == "snapshot" && opening.count == 2)
                feeds.append(feed)
            }
            #expect(api.metric(#"orderlive_http2_streams_total{listener="api"}"#) == 20)
            #expect(api.server.admission.current == 1, "twenty feeds, one connection")
            #expect(api.server.hub.subscriberCount == 20)

            try api.store.applyUpsert(try order(2, status: "created", version: 1))
            for feed in feeds {
                let live = try #require(try await feed.nextEvent())
                #expect(live.type == "order.upserted" && live.data.range(of: #""id":"?2"?[,}]"#, options: .regularExpression) != nil)
            }
            // Idle: each stream gets its own heartbeat comment.
            for feed in feeds {
                guard case .comment = try #require(try await feed.next(within: .seconds(10))) else {
                    Issue.record("an idle HTTP/2 feed got no heartbeat")
                    continue
                }
            }

            // One tab closes: its stream ends, the connection and the other nineteen stay.
            feeds[0].close()
            #expect(await api.server.hub.subscriberCountChange(from: 20, within: .seconds(10)) == 19)
            try api.store.applyUpsert(try order(3, status: "created", version: 1))
            for feed in feeds.dropFirst() {
                let live = try #require(try await feed.nextEvent())
                #expect(live.type == "order.upserted" && live.data.range(of: #""id":"?3"?[,}]"#, options: .regularExpression) != nil)
            }
            #expect(api.server.admission.current == 1)
        }
    }

    /// h2load (nghttp2's load generator) opens 100 streams on one `h2c` connection: 1,000 `/healthz`
    /// requests all succeed, and 100 feeds are held at once, every one a subscriber, on one connection.
    @Test func h2loadHoldsAHundredStreamsOnOneConnection() async throws {
        try await APIHarness.with(http2: ListenerHTTP2(cleartext: true)) { api in
            let healthz = try await runTool("/usr/bin/env", ["h2load", "-n", "1000", "-c", "1", "-m", "100", api.base + "/healthz"])
            #expect(healthz.output.contains("1000 succeeded, 0 failed, 0 errored"), "\(healthz.output)")

            let feeds = Task {
                try await runTool("/usr/bin/env", ["h2load", "-c", "1", "-m", "100", "-D", "4", api.base + "/v1/orders/stream"])
            }
            #expect(await Self.subscribers(api, reach: 100) == 100)
            #expect(api.server.admission.current == 1, "a hundred feeds, one connection")
            // h2load leaves at the end of its duration: every stream, and so every subscriber, goes.
            _ = try await feeds.value
            #expect(await Self.subscribers(api, reach: 0) == 0)
        }
    }
}
