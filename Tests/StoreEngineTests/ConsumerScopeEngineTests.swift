import CurlHTTP
import Foundation
import OrdersAPI
import StoreModel
import TestHarnesses
import TestKit
import Testing
import WebhookSigning
import AsyncSignals

/// DESIGN §14's scope on both store engines (the SQLite-only property test is in OrdersAPITests): a
/// random book over three stores, random consumers (tokens, digests, sessions), orders moving between
/// stores; on every route — list, filters, one order, the feed's snapshot, live changes, a resume and
/// a reset after pruning — each consumer sees exactly its stores' orders.
@Suite(.timeLimit(.minutes(5))) struct ConsumerScopeEngineTests {
    static let stores = ["1", "2", "3"]

    struct Consumer {
        var token: String
        var stores: Set<String>?
        var line: String
        var header: HTTPHeaders

        func sees(_ order: OrderRecord) -> Bool { stores.map { set in order.storeID.map(set.contains) == true } ?? true }
    }

    static func upsert(_ store: any AnyOrderStore, _ api: APIServing, id: Int, storeID: String, version: Int, status: String) async throws {
        _ = try await store.applyUpsert(try order(id, status: status, version: version, extra: ["store_id": Int(storeID) ?? 0]), completing: nil)
        api.wake.signal()
    }

    static func expected(_ store: any AnyOrderStore, _ consumer: Consumer) async throws -> Set<String> {
        Set(try await store.orders(status: nil).filter(consumer.sees).map(\.id))
    }

    static func converge(_ feed: FeedReader, _ view: inout FeedView, to ids: Set<String>) async throws -> Bool {
        let clock = ContinuousClock()
        let deadline = clock.now.advanced(by: .seconds(15))
        while Set(view.orders.keys) != ids, clock.now < deadline {
            guard let event = try await feed.nextEvent(within: .seconds(15)) else { return false }
            view.apply(type: event.type, id: event.id, data: event.data)
        }
        return Set(view.orders.keys) == ids
    }

    @Test(arguments: StoreEngine.allCases)
    func eachConsumerSeesExactlyItsStoresOnEitherEngine(_ engine: StoreEngine) async throws {
        var random = SplitMix(state: engine == .sqlite ? 17 : 29)
        var consumers: [Consumer] = (0..<4).map { index in
            let token = "engine-\(index)-\(random.next())"
            var stores: Set<String>? = Set(Self.stores.filter { _ in random.next() % 2 == 0 })
            if stores?.isEmpty == true || index == 3 { stores = nil }
            let written = stores.map { $0.sorted().joined(separator: ",") } ?? "*"
            let credential = index % 2 == 0 ? "sha256:" + SHA256Digest.of(Array(token.utf8)).map { String(format: "%02x", $0) }.joined() : token
            return Consumer(token: token, stores: stores, line: "\(credential) name=c\(index) stores=\(written)",
                            header: ["Authorization": "Bearer \(token)"])
        }
        let authentication = APIAuthentication.bearer(consumers: try APIConsumers.parse(consumers.map(\.line).joined(separator: "\n")))
        try await withStore(engine) { store in
            try await APIServing.with(store: store, authentication: authentication) { api in
                var versions: [Int: Int] = [:]
                for id in 1...90 {
                    try await Self.upsert(store, api, id: id, storeID: Self.stores[Int(random.next() % 3)], version: 1, status: "created")
                    versions[id] = 1
                }
                for index in consumers.indices where index % 2 == 1 {
                    let started = try await api.loop.perform(HTTPRequest(url: api.base + "/v1/session", method: "POST", headers: consumers[index].header))
                    let cookie = try #require(started.head.headers["Set-Cookie"]?.split(separator: ";").first.map(String.init))
                    consumers[index].header = ["Cookie": cookie]
                }
                var feeds: [(FeedReader, FeedView, String)] = []
                for consumer in consumers {
                    let expected = try await Self.expected(store, consumer)
                    #expect(try await api.ids("/v1/orders", headers: consumer.header) == expected, "\(engine): \(consumer.line)")
                    for storeID in Self.stores {
                        let path = "/v1/orders?store_id=\(storeID)"
                        if consumer.stores?.contains(storeID) == false {
                            #expect(try await api.get(path, headers: consumer.header).status == 403)
                        } else {
                            let all = Set(try await store.orders(status: nil).filter { $0.storeID == storeID }.map(\.id))
                            #expect(try await api.ids(path, headers: consumer.header) == all)
                        }
                    }
                    for id in [1, 30, 60, 90] {
                        #expect(try await api.get("/v1/orders/\(id)", headers: consumer.header).status == (expected.contains("\(id)") ? 200 : 404))
                    }
                    let feed = try await api.feed(headers: consumer.header)
                    var view = FeedView()
                    for event in try await feed.events(through: "ready") { view.apply(type: event.type, id: event.id, data: event.data) }
                    #expect(Set(view.orders.keys) == expected, "\(engine): snapshot of \(consumer.line)")
                    feeds.append((feed, view, view.lastID))
                }
                for step in 0..<40 {
                    let id = 1 + Int(random.next() % 100)
                    if random.next() % 6 == 0, let version = versions[id] {
                        _ = try await store.applyDelete(orderID: "\(id)", version: Int64(version + 1), completing: nil)
                        api.wake.signal()
                        versions[id] = nil
                    } else {
                        let version = (versions[id] ?? 0) + 1
                        try await Self.upsert(store, api, id: id, storeID: Self.stores[Int(random.next() % 3)], version: version, status: "s\(step)")
                        versions[id] = version
                    }
                }
                for (index, consumer) in consumers.enumerated() {
                    var (feed, view, readyID) = feeds[index]
                    let expected = try await Self.expected(store, consumer)
                    #expect(try await Self.converge(feed, &view, to: expected), "\(engine): live view of \(consumer.line)")
                    feed.close()
                    var resumed = feeds[index].1
                    var headers = consumer.header
                    headers.add(name: "Last-Event-ID", value: readyID)
                    let again = try await api.feed(headers: headers)
                    #expect(try await Self.converge(again, &resumed, to: expected), "\(engine): resumed view of \(consumer.line)")
                    again.close()
                }
                _ = try await store.pruneChanges(keeping: 0, batch: 10_000)
                for (index, consumer) in consumers.enumerated() {
                    var headers = consumer.header
                    headers.add(name: "Last-Event-ID", value: feeds[index].2)
                    let reset = try await api.feed(headers: headers)
                    var view = FeedView()
                    for event in try await reset.events(through: "ready") { view.apply(type: event.type, id: event.id, data: event.data) }
                    #expect(Set(view.orders.keys) == (try await Self.expected(store, consumer)), "\(engine): reset of \(consumer.line)")
                    reset.close()
                }
                for consumer in consumers { #expect(!api.logs.text.contains(consumer.token)) }
            }
        }
    }
}
