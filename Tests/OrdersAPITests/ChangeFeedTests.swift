import AsyncSignals
import CurlHTTP
import Foundation
import SQLiteStore
import StoreModel
import OrdersAPI
import TestHarnesses
import TestKit
import Testing

/// The change feed's contract (DESIGN §11) against a real store and a real HTTP client.
@Suite(.timeLimit(.minutes(3))) struct ChangeFeedTests {
    @Test func aNewSubscriberGetsTheSnapshotThenReadyThenLiveChangesInOrder() async throws {
        try await APIHarness.with(prepare: { store in
            for id in [3, 1, 2] { try store.applyUpsert(try order(id, status: "created", version: 1)) }
        }) { api in
            let head = try api.store.changeHead()
            let feed = try await api.feed()
            #expect(feed.status == 200)
            #expect(feed.headers["Content-Type"]?.hasPrefix("text/event-stream") == true)
            #expect(try await feed.next() == .retry(1000))
            let start = try await feed.events(through: "ready")
            #expect(start.map(\.type) == ["snapshot", "snapshot", "snapshot", "ready"])
            #expect(start.prefix(3).map { $0.data.contains(#""id":"#) } == [true, true, true])
            #expect(start.prefix(3).compactMap { Self.orderID($0.data) } == ["1", "2", "3"])
            #expect(start[3].id == "\(head)" && start[3].data == #"{"seq":\#(head)}"#)

            try api.store.applyUpsert(try order(2, status: "assigned", version: 2))
            try api.store.applyDelete(orderID: "3", version: 2)
            try api.store.applyUpsert(try order(1, status: "created", version: 1))  // stale: no change
            try api.store.applyUpsert(try order(4, status: "created", version: 1))
            let upserted = try #require(try await feed.nextEvent())
            #expect(upserted.type == "order.upserted" && upserted.id == "\(head + 1)")
            #expect(upserted.data.hasPrefix(#"{"seq":\#(head + 1),"order":{"#) && upserted.data.contains(#""status":"assigned""#))
            let deleted = try #require(try await feed.nextEvent())
            #expect(deleted.type == "order.deleted" && deleted.id == "\(head + 2)")
            #expect(deleted.data == #"{"seq":\#(head + 2),"order_id":"3","version":2}"#)
            let next = try #require(try await feed.nextEvent())
            #expect(next.type == "order.upserted" && next.id == "\(head + 3)" && Self.orderID(next.data) == "4")
            #expect(api.metric(#"orderlive_api_feed_starts_total{outcome="new"}"#) == 1)
            #expect(api.metric("orderlive_api_subscribers") == 1)
        }
    }

    @Test func aSubscriberResumingFromAnIDInHistoryGetsExactlyWhatItMissed() async throws {
        try await APIHarness.with(prepare: { store in
            try store.applyUpsert(try order(1, status: "created", version: 1))
        }) { api in
            let first = try await api.feed()
            let ready = try #require(try await first.events(through: "ready").last)
            first.close()
            // Away: five changes.
            for version in 2...6 { try api.store.applyUpsert(try order(1, status: "s\(version)", version: version)) }
            let seq = try #require(Int64(ready.id))
            for request in [(path: "/v1/orders/stream", headers: ["Last-Event-ID": "\(seq)"] as HTTPHeaders),
                            (path: "/v1/orders/stream?since=\(seq)", headers: [:] as HTTPHeaders)] {
                let resumed = try await api.feed(request.path, headers: request.headers)
                var received: [(type: String, id: String, data: String)] = []
                for _ in 0..<5 { received.append(try #require(try await resumed.nextEvent())) }
                #expect(received.map(\.type) == Array(repeating: "order.upserted", count: 5))
                #expect(received.map(\.id) == (1...5).map { "\(seq + Int64($0))" })
                #expect(received.map { $0.data.contains(#""status":"s"#) } == Array(repeating: true, count: 5))
                // Then live.
                try api.store.applyUpsert(try order(1, status: "live", version: 7 + received.count))
                let live = try #require(try await resumed.nextEvent())
                #expect(live.type == "order.upserted" && live.data.contains(#""status":"live""#))
                resumed.close()
            }
            // Counted as each feed starts, which a loaded machine may finish after the test read its events.
            #expect(await eventually(within: .seconds(10)) { api.metric(#"orderlive_api_feed_starts_total{outcome="resumed"}"#) == 2 })
        }
    }

    @Test(arguments: ["older", "future", "garbage", "before a user switch"])
    func anIDThatCannotBeResumedGetsResetThenASnapshot(_ kind: String) async throws {
        try await APIHarness.with(hub: .init(historyChanges: 3), prepare: { store in
            try store.claim(for: "first-user")
            try store.applyUpsert(try order(1, status: "created", version: 1))
        }) { api in
            let start = try api.store.changeHead()
            var id = ""
            switch kind {
            case "older":
                for version in 2...10 { try api.store.applyUpsert(try order(1, status: "created", version: version)) }
                await #expect(try api.store.pruneChanges(keeping: 3, batch: 100) > 0)
                id = "\(start)"
            case "future":
                id = "\(start + 1_000)"
            case "garbage":
                id = "not-a-number"
            default:
                id = "\(start)"
                try api.store.claim(for: "second-user")
                try api.store.applyUpsert(try order(7, status: "assigned", version: 1))
            }
            let feed = try await api.feed(headers: ["Last-Event-ID": id])
            let events = try await feed.events(through: "ready")
            #expect(events.first?.type == "reset")
            #expect(events.dropFirst().dropLast().allSatisfy { $0.type == "snapshot" })
            var view = FeedView()
            for event in events { view.apply(type: event.type, id: event.id, data: event.data) }
            let (seq, orders) = try await api.orders()
            #expect(view.orders == orders)
            #expect(events.last?.id == "\(seq)")
            #expect(api.metric(#"orderlive_api_feed_starts_total{outcome="reset"}"#) == 1)
        }
    }

    @Test func filteredViewsHearOrdersLeaveAndEnter() async throws {
        try await APIHarness.with(prepare: { store in
            try store.applyUpsert(try order(1, status: "assigned", version: 1, extra: ["store_id": 5]))
            try store.applyUpsert(try order(2, status: "created", version: 1, extra: ["store_id": 5]))
            try store.applyUpsert(try order(3, status: "assigned", version: 1, extra: ["store_id": 6]))
        }) { api in
            let feed = try await api.feed("/v1/orders/stream?status=assigned&status=delivering&store_id=5")
            let start = try await feed.events(through: "ready")
            #expect(start.compactMap { Self.orderID($0.data) } == ["1"])
            try api.store.applyUpsert(try order(1, status: "picked_up", version: 2, extra: ["store_id": 5]))  // leaves
            try api.store.applyUpsert(try order(3, status: "delivering", version: 2, extra: ["store_id": 6]))  // other store
            try api.store.applyUpsert(try order(2, status: "assigned", version: 2, extra: ["store_id": 5]))  // enters
            try api.store.applyUpsert(try order(1, status: "delivering", version: 3, extra: ["store_id": 5]))  // enters again
            try api.store.applyDelete(orderID: "3", version: 3)  // never in view
            try api.store.applyDelete(orderID: "2", version: 3)  // in view
            var received: [String] = []
            for _ in 0..<4 {
                let event = try #require(try await feed.nextEvent())
                received.append("\(event.type) \(Self.orderID(event.data) ?? "?")")
            }
            #expect(received == ["order.removed 1", "order.upserted 2", "order.upserted 1", "order.deleted 2"])
            let (_, orders) = try await api.orders("?status=assigned&status=delivering&store_id=5")
            #expect(Set(orders.keys) == ["1"])
        }
    }

    @Test func manySubscribersWithDifferentFiltersEndEqualToTheSnapshotOfTheirFilter() async throws {
        let filters = ["", "?status=created", "?status=assigned&status=picked_up", "?store_id=1", "?store_id=2&status=delivered",
                       "?courier_id=7", "?status=cancelled", "?store_id=3&courier_id=8"]
        try await APIHarness.with { api in
            var feeds: [(query: String, reader: FeedReader, view: FeedView)] = []
            for query in filters {
                let reader = try await api.feed("/v1/orders/stream" + query)
                var view = FeedView()
                for event in try await reader.events(through: "ready") { view.apply(type: event.type, id: event.id, data: event.data) }
                feeds.append((query, reader, view))
            }
            var random = SplitMix(state: 0x5eed)
            let statuses = ["created", "assigned", "picked_up", "delivering", "delivered", "cancelled"]
            var versions: [Int: Int] = [:]
            for _ in 0..<400 {
                let id = Int.random(in: 1...40, using: &random)
                let version = (versions[id] ?? 0) + 1
                versions[id] = version
                if Int.random(in: 0..<8, using: &random) == 0 {
                    try api.store.applyDelete(orderID: "\(id)", version: Int64(version))
                } else {
                    try api.store.applyUpsert(try order(id, status: statuses.randomElement(using: &random) ?? "created", version: version,
                                                        extra: ["store_id": Int.random(in: 1...3, using: &random),
                                                                "courier_id": Int.random(in: 7...8, using: &random)]))
                }
            }
            let head = try api.store.changeHead()
            for index in feeds.indices {
                let expected = try await api.orders(feeds[index].query)
                #expect(expected.seq == head)
                // Read until the view equals the snapshot (a view hears only the changes that touch it,
                // so there is no last id to wait for); a view that never gets there times out.
                while feeds[index].view.orders != expected.orders,
                      let event = try await feeds[index].reader.nextEvent(within: .seconds(10)) {
                    feeds[index].view.apply(type: event.type, id: event.id, data: event.data)
                }
                #expect(feeds[index].view.orders == expected.orders, "filter \(feeds[index].query)")
                let seqs = feeds[index].view.seqs
                #expect(seqs == seqs.sorted() && Set(seqs).count == seqs.count, "filter \(feeds[index].query)")
            }
            // The unfiltered view saw every change: consecutive, no gaps.
            let all = feeds[0].view.seqs
            #expect(all.count > 300 && all.last == head && zip(all, all.dropFirst()).allSatisfy { $1 == $0 + 1 })
        }
    }

    @Test func anIdleStreamGetsHeartbeats() async throws {
        try await APIHarness.with(hub: .init(heartbeat: .seconds(1))) { api in
            let feed = try await api.feed()
            _ = try await feed.events(through: "ready")
            var comments = 0
            while comments < 2, let message = try await feed.next(within: .seconds(10)) {
                if case .comment = message { comments += 1 }
            }
            #expect(comments == 2)
        }
    }

    @Test func subscribersBeyondTheMaximumGet503WithRetryAfter() async throws {
        try await APIHarness.with(hub: .init(maximumSubscribers: 2)) { api in
            let first = try await api.feed()
            let second = try await api.feed()
            _ = try await first.events(through: "ready")
            _ = try await second.events(through: "ready")
            let refused = try await api.get("/v1/orders/stream")
            #expect(refused.status == 503)
            #expect(refused.headers["Retry-After"] == "5")
            #expect(refused.body.contains("api.max_subscribers"))
            #expect(api.metric(#"orderlive_api_feed_starts_total{outcome="refused"}"#) == 1)
            first.close()
            // Its slot is freed once the server sees the connection close.
            #expect(await api.server.hub.subscriberCountChange(from: 2, within: .seconds(10)) == 1)
            let third = try await api.feed()
            #expect(third.status == 200)
        }
    }

    @Test func aSubscriberThatWentAwayFreesItsSlotAtOnceThoughNothingIsWrittenToIt() async throws {
        try await APIHarness.with(hub: .init(maximumSubscribers: 1, heartbeat: .seconds(600))) { api in
            let first = try await api.feed()
            _ = try await first.events(through: "ready")
            for version in 1...3 { try api.store.applyUpsert(try order(1, version: version)) }
            _ = try await first.events(through: "order.upserted")
            first.close()
            // No change is committed and no heartbeat is due: nothing is written that could fail.
            let freed = await api.server.hub.subscriberCountChange(from: 1, within: .seconds(10))
            #expect(freed == 0)
            let second = try await api.feed()
            #expect(second.status == 200)
        }
    }

    static func orderID(_ data: String) -> String? {
        guard let object = try? JSONSerialization.jsonObject(with: Data(data.utf8)) as? [String: Any] else { return nil }
        if let order = object["order"] as? [String: Any], let id = order["id"] { return "\(id)" }
        return object["order_id"].map { "\($0)" }
    }
}

/// DESIGN §11: no subscriber can slow another or grow memory without bound.
@Suite(.timeLimit(.minutes(3))) struct SlowSubscriberTests {
    @Test func aStalledSubscriberIsCutOffWithOverflowWhileFiftyOthersGetEveryChange() async throws {
        let buffer = 128
        try await APIHarness.with(hub: .init(subscriberBuffer: buffer)) { api in
            // Reads nothing at all, with a small receive window so the server's writes stop soon.
            let stalled = try RawConnection(port: api.port, readTimeoutSeconds: 20, receiveBuffer: 4_096)
            stalled.send("GET /v1/orders/stream HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
            // Its response head means it is subscribed; after that it reads nothing.
            #expect(await stalled.readResponseHead().hasPrefix("HTTP/1.1 200"))
            var readers: [FeedReader] = []
            for _ in 0..<50 {
                let reader = try await api.feed()
                _ = try await reader.events(through: "ready")
                readers.append(reader)
            }
            #expect(api.server.hub.subscriberCount == 51)
            let start = try api.store.changeHead()
            // Changes of about 2 KB, in commits of 20, until the stalled subscriber is cut off (its
            // socket's buffers and its queue of 128 hold far less than the 4 MB of the most pages
            // written). The next commit waits until the 50 readers have the last one, so they are
            // never more than one commit behind: only the stalled subscriber falls behind.
            let padding = String(repeating: "x", count: 2_000)
            let received = Locked([[Int64]](repeating: [], count: readers.count))
            let progress = WakeSignal()
            let feeds = readers
            let reading = Task {
                await withTaskGroup(of: Void.self) { group in
                    for (index, reader) in feeds.enumerated() {
                        group.addTask {
                            while let event = try? await reader.nextEvent(within: .seconds(60)) {
                                if event.type == "order.upserted", let seq = Int64(event.id) {
                                    received.withLock { $0[index].append(seq) }
                                    progress.signal()
                                }
                            }
                        }
                    }
                }
            }
            let clock = ContinuousClock()
            var total = 0
            while api.metric("orderlive_api_subscribers_cut_off_total") == 0, total < 2_000 {
                let page = total / 20
                try api.store.applyPage(try (0..<20).map { index in
                    try order(page * 20 + index, status: "created", version: 1, extra: ["padding": padding])
                })
                total += 20
                let deadline = clock.now.advanced(by: .seconds(30))
                while received.withLock({ $0.map(\.count).min() ?? 0 }) < total, clock.now < deadline {
                    await progress.wait(until: deadline, clock: clock)
                }
            }
            for reader in feeds { reader.close() }
            await reading.value
            let expected = Array((start + 1)...(start + Int64(total)))
            for seqs in received.withLock({ $0 }) {
                let everyChange = seqs == expected
                #expect(everyChange, "a reader got \(seqs.count) of \(total) changes")
            }
            #expect(api.metric("orderlive_api_subscribers_cut_off_total") == 1)
            #expect(api.server.hub.peakQueuedEvents <= buffer)
            // The stalled subscriber, read at last: what its socket held, then overflow, and the end.
            let (text, closed) = await stalled.readUntilClosed()
            #expect(text.contains("event: overflow"))
            #expect(closed)
        }
    }

    @Test func aSubscriberThatStopsReadingForAWhileGetsEveryChangeWhenItReadsAgain() async throws {
        try await APIHarness.with(hub: .init(subscriberBuffer: 1_024)) { api in
            // A small receive window: the server's socket stops being writable, and the rest wait in
            // the subscriber's queue until it reads again. (With the write on writability removed from
            // FeedConnectionHandler, this test times out with the changes after the first 4 MB missing.)
            let paused = try RawConnection(port: api.port, readTimeoutSeconds: 60, receiveBuffer: 4_096)
            paused.send("GET /v1/orders/stream HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
            #expect(await paused.read(through: "event: ready").contains("HTTP/1.1 200"))
            let start = try api.store.changeHead()
            let padding = String(repeating: "x", count: 8_000)
            for page in 0..<50 {
                try api.store.applyPage(try (0..<20).map { index in
                    try order(page * 20 + index, status: "created", version: 1, extra: ["padding": padding])
                })
            }
            let last = start + 1_000
            // 8 MB were committed: more than the sockets hold (Linux lets a send buffer grow to 4 MB),
            // less than the queue's 1,024 changes.
            let text = await paused.read(through: "id: \(last)\n")
            // Chunk sizes end in CRLF, a single Character in Swift.
            let seqs = text.split(whereSeparator: { $0 == "\n" || $0 == "\r\n" }).compactMap { line in line.hasPrefix("id: ") ? Int64(line.dropFirst(4)) : nil }
            #expect(seqs == Array((start + 1)...last))
            #expect(!text.contains("event: overflow"))
            #expect(api.metric("orderlive_api_subscribers_cut_off_total") == 0)
        }
    }
}

/// The hub prunes the change log beyond `api.history_changes`, off the hot path.
@Suite(.timeLimit(.minutes(3))) struct HistoryPruningTests {
    @Test func theHubKeepsOnlyTheConfiguredHistory() async throws {
        try await APIHarness.with(hub: .init(historyChanges: 50)) { api in
            for page in 0..<12 {
                try api.store.applyPage(try (0..<100).map { try order(page * 100 + $0, version: 1) })
            }
            _ = await eventually(within: .seconds(20), every: .milliseconds(20)) { try api.store.changeCount() <= 250 }
            #expect(try api.store.changeCount() <= 250)
            // A subscriber from before the kept history is reset; one inside it resumes.
            let head = try api.store.changeHead()
            let old = try await api.feed(headers: ["Last-Event-ID": "\(head - 1_000)"])
            #expect(try await old.nextEvent()?.type == "reset")
            let recent = try await api.feed(headers: ["Last-Event-ID": "\(head - 10)"])
            #expect(try await recent.nextEvent()?.id == "\(head - 9)")
        }
    }
}
