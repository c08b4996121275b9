import CurlHTTP
import Foundation
import SQLiteStore
import OrdersAPI
import StoreModel
import TestHarnesses
import TestKit
import Testing
import WebhookSigning

/// DESIGN §14 "Scopes on the orders API" over random books and random consumers (tokens, digests of
/// tokens, board sessions and a JWT): on every route —
/// the list and its filters, one order, the feed's snapshot, its live changes as orders move between
/// stores, a resume, and a reset after pruning — a consumer sees exactly its stores' orders, nothing
/// more, nothing less.
@Suite(.timeLimit(.minutes(3))) struct ConsumerScopeTests {
    static let stores = ["1", "2", "3"]

    struct Consumer {
        var token: String
        var stores: Set<String>?
        var line: String
        /// The board's session cookie, when this consumer reads through a session instead of its token.
        var session: String?
        /// A JWT naming the same stores, when this consumer presents one instead of its token.
        var jwt: String?

        func sees(_ order: OrderRecord) -> Bool {
            stores.map { set in order.storeID.map(set.contains) == true } ?? true
        }

        var header: HTTPHeaders {
            if let session { return ["Cookie": "orderlive_session=\(session)"] }
            if let jwt { return ["Authorization": "Bearer \(jwt)"] }
            return ["Authorization": "Bearer \(token)"]
        }

        /// What `?access_token=` carries for it (a session has none: its token then).
        var queryToken: String { jwt ?? token }
    }

    static func hex(_ bytes: [UInt8]) -> String {
        bytes.map { String(format: "%02x", $0) }.joined()
    }

    static func randomConsumers(_ random: inout SplitMix) -> [Consumer] {
        (0..<4).map { index in
            let token = "scope-\(index)-\(random.next())"
            var stores: Set<String>? = Set(stores.filter { _ in random.next() % 2 == 0 })
            if stores?.isEmpty == true || random.next() % 5 == 0 { stores = nil }
            let written = stores.map { $0.sorted().joined(separator: ",") } ?? "*"
            // Half the consumers are written by their token's digest, as a file that holds no secret.
            let credential = random.next() % 2 == 0 ? "sha256:" + hex(SHA256Digest.of(Array(token.utf8))) : token
            return Consumer(token: token, stores: stores, line: "\(credential) name=consumer-\(index) stores=\(written)")
        }
    }

    static func upsert(_ store: SQLiteOrderStore, id: Int, storeID: String, version: Int, status: String = "created") throws {
        try store.applyUpsert(try order(id, status: status, version: version, extra: ["store_id": Int(storeID) ?? 0]))
    }

    /// The orders `consumer` must see now, as the feed's canonical text by id.
    static func expected(_ api: APIHarness, _ consumer: Consumer) throws -> Set<String> {
        Set(try api.store.orders().filter(consumer.sees).map(\.id))
    }

    /// Reads `feed` into `view` until it holds exactly `ids`, or 10 s pass.
    static func converge(_ feed: FeedReader, _ view: inout FeedView, to ids: Set<String>) async throws -> Bool {
        let clock = ContinuousClock()
        let deadline = clock.now.advanced(by: .seconds(10))
        while Set(view.orders.keys) != ids, clock.now < deadline {
            guard let event = try await feed.nextEvent(within: .seconds(10)) else { return false }
            view.apply(type: event.type, id: event.id, data: event.data)
        }
        return Set(view.orders.keys) == ids
    }

    @Test(arguments: 0..<4)
    func everyRouteShowsAConsumerExactlyItsStores(_ seed: Int) async throws {
        var random = SplitMix(state: UInt64(seed) &+ 101)
        var consumers = Self.randomConsumers(&random)
        // One consumer of four presents a JWT (minted by PyJWT) naming the same stores instead of its token.
        let mint = try await JWTMint.make()
        defer { try? FileManager.default.removeItem(atPath: mint.directory) }
        let jwtIndex = 2
        let stores = consumers[jwtIndex].stores.map { #"[\#($0.sorted().map { "\"\($0)\"" }.joined(separator: ","))]"# } ?? #""*""#
        consumers[jwtIndex].jwt = try await mint.token(
            #"{"sub":"jwt-consumer","stores":\#(stores),"scope":"orders:read","exp":\#(Int64(Date().timeIntervalSince1970 + 3_600))}"#,
            key: "ec", alg: "ES256")
        let verifier = try JWTVerifier(sources: .init(keysFile: try mint.publicPEM()), settings: .init(), logger: quietLogger)
        let file = "# consumers of this test\n" + consumers.map(\.line).joined(separator: "\n") + "\n"
        let authentication = APIAuthentication.bearer(APICredentials(consumers: try APIConsumers.parse(file), jwt: verifier))
        var versions: [Int: Int] = [:]
        try await APIHarness.with(authentication: authentication, prepare: { store in
            var prepared = SplitMix(state: UInt64(seed) &+ 7)
            for id in 1...150 {
                try Self.upsert(store, id: id, storeID: Self.stores[Int(prepared.next() % 3)], version: 1)
            }
        }) { api in
            for id in 1...150 { versions[id] = 1 }
            // Every other consumer reads through a board session started with its token.
            var consumers = consumers
            for index in consumers.indices where index % 2 == 1 {
                consumers[index].session = try await APISessionTests.startSession(api, token: consumers[index].token)
            }
            var feeds: [(FeedReader, FeedView, String)] = []
            for consumer in consumers {
                let expected = try Self.expected(api, consumer)
                let list = try await api.get("/v1/orders", headers: consumer.header)
                #expect(list.status == 200)
                let listed = try await api.orders("?access_token=\(consumer.queryToken)")
                #expect(Set(listed.orders.keys) == expected, "seed \(seed): \(consumer.line)")
                for store in Self.stores {
                    let filtered = try await api.get("/v1/orders?store_id=\(store)", headers: consumer.header)
                    if consumer.stores?.contains(store) == false {
                        #expect(filtered.status == 403 && filtered.body.contains("may read"), "seed \(seed): store \(store)")
                        let feed = try await api.get("/v1/orders/stream?store_id=\(store)", headers: consumer.header)
                        #expect(feed.status == 403, "seed \(seed): the feed of store \(store)")
                    } else {
                        let inStore = try await api.orders("?store_id=\(store)&access_token=\(consumer.queryToken)")
                        let all = try api.store.orders().filter { $0.storeID == store }.map(\.id)
                        #expect(Set(inStore.orders.keys) == Set(all))
                    }
                }
                for id in [1, 2, 3, 50, 99, 150] {
                    let one = try await api.get("/v1/orders/\(id)", headers: consumer.header)
                    #expect(one.status == (expected.contains("\(id)") ? 200 : 404), "seed \(seed): order \(id), \(consumer.line)")
                }
                let feed = try await api.feed(headers: consumer.header)
                var view = FeedView()
                for event in try await feed.events(through: "ready") { view.apply(type: event.type, id: event.id, data: event.data) }
                #expect(Set(view.orders.keys) == expected, "seed \(seed): snapshot of \(consumer.line)")
                feeds.append((feed, view, view.lastID))
            }
            // Orders move between stores, some are deleted, new ones come.
            for step in 0..<60 {
                let id = 1 + Int(random.next() % 170)
                if random.next() % 6 == 0, versions[id] != nil {
                    let version = (versions[id] ?? 1) + 1
                    try api.store.applyDelete(orderID: "\(id)", version: Int64(version))
                    versions[id] = nil
                } else {
                    let version = (versions[id] ?? 0) + 1
                    try Self.upsert(api.store, id: id, storeID: Self.stores[Int(random.next() % 3)], version: version, status: "s\(step)")
                    versions[id] = version
                }
            }
            for (index, consumer) in consumers.enumerated() {
                var (feed, view, readyID) = feeds[index]
                let expected = try Self.expected(api, consumer)
                #expect(try await Self.converge(feed, &view, to: expected), "seed \(seed): live view of \(consumer.line)")
                feed.close()
                // Resumed from the snapshot's id: the changes it missed, within its stores only.
                var resumed = feeds[index].1
                let again = try await api.feed(headers: consumer.header.adding("Last-Event-ID", readyID))
                #expect(try await Self.converge(again, &resumed, to: expected), "seed \(seed): resumed view of \(consumer.line)")
                again.close()
            }
            // Pruned past every id: a resume resets to a snapshot of its stores.
            _ = try await api.store.pruneChanges(keeping: 0)
            for (index, consumer) in consumers.enumerated() {
                let reset = try await api.feed(headers: consumer.header.adding("Last-Event-ID", feeds[index].2))
                var view = FeedView()
                for event in try await reset.events(through: "ready") { view.apply(type: event.type, id: event.id, data: event.data) }
                #expect(Set(view.orders.keys) == (try Self.expected(api, consumer)), "seed \(seed): reset of \(consumer.line)")
                reset.close()
            }
            for consumer in consumers {
                #expect(!api.logs.text.contains(consumer.token))
                if let jwt = consumer.jwt { #expect(!api.logs.text.contains(jwt)) }
            }
        }
    }
}

extension HTTPHeaders {
    /// These headers and one more.
    func adding(_ name: String, _ value: String) -> HTTPHeaders {
        var headers = self
        headers.add(name: name, value: value)
        return headers
    }
}
