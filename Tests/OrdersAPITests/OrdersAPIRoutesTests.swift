import CurlHTTP
import Foundation
import SQLiteStore
import StoreModel
import OrdersAPI
import TestHarnesses
import Testing
import HTTPTypes
import LocalHTTP
import TestKit

/// The orders API's routes, authentication and OpenAPI document (DESIGN §11).
@Suite(.timeLimit(.minutes(3))) struct OrdersAPIRoutesTests {
    @Test func ordersAreServedExactlyAsReceivedWithTheirSeqAndFilters() async throws {
        try await APIHarness.with(prepare: { store in
            try store.applyUpsert(try order(10, status: "created", version: 1, extra: ["store_id": 1, "note": "ünïcode"]))
            try store.applyUpsert(try order(9, status: "assigned", version: 1, extra: ["store_id": 2]))
            try store.applyUpsert(try order("a-7", status: "assigned", version: 1, extra: ["store_id": 1, "courier_id": 4]))
        }) { api in
            let all = try await api.orders()
            #expect(all.seq == (try api.store.changeHead()))
            #expect(Set(all.orders.keys) == ["9", "10", "a-7"])
            let list = try await api.get("/v1/orders")
            #expect(list.body.range(of: #""id":9"#)?.lowerBound ?? list.body.endIndex
                < list.body.range(of: #""id":10"#)?.lowerBound ?? list.body.startIndex)
            #expect(Set(try await api.orders("?status=assigned").orders.keys) == ["9", "a-7"])
            #expect(Set(try await api.orders("?status=assigned&store_id=1").orders.keys) == ["a-7"])
            #expect(Set(try await api.orders("?store_id=1&store_id=2&courier_id=4").orders.keys) == ["a-7"])
            #expect(try await api.orders("?status=gone").orders.isEmpty)
            let one = try await api.get("/v1/orders/10")
            #expect(one.status == 200)
            #expect(one.body == (try api.store.order(id: "10"))?.body)
            // One order's route has no filters: its query beyond access_token is not read (as before scopes).
            #expect(try await api.get("/v1/orders/10?status=x&anything=1").status == 200)
            let missing = try await api.get("/v1/orders/404")
            #expect(missing.status == 404 && missing.body.hasPrefix(#"{"code":404,"message":"#))
            let typo = try await api.get("/v1/orders?statuses=created")
            #expect(typo.status == 400 && typo.body.contains("'statuses'"))
            let empty = try await api.get("/v1/orders/stream?status=")
            #expect(empty.status == 400 && empty.body.contains("'status'"))
            let board = try await api.get("/")
            #expect(board.status == 200 && board.headers["Content-Type"] == "text/html; charset=utf-8")
            #expect(board.body.contains("EventSource") && !board.body.contains("http://") && !board.body.contains("https://"))
            #expect(try await api.get("/healthz").body == #"{"status":"ok"}"#)
            let wrongMethod = try await api.loop.perform(HTTPRequest(url: api.base + "/v1/orders/10", method: "DELETE"))
            #expect(wrongMethod.status == 405 && wrongMethod.head.headers["Allow"] == "GET, HEAD")
        }
    }

    @Test func bearerTokensAreCheckedInTheHeaderAndTheQueryAndNeverLogged() async throws {
        let tokens = ["board-token-\(UUID().uuidString)", "till-token-\(UUID().uuidString)"]
        try await APIHarness.with(authentication: .bearer(tokens: tokens)) { api in
            for path in ["/v1/orders", "/v1/orders/1", "/v1/orders/stream"] {
                let missing = try await api.get(path)
                #expect(missing.status == 401 && missing.body.contains("missing"), "\(path)")
                let wrong = try await api.get(path, headers: ["Authorization": "Bearer \(tokens[0])x"])
                #expect(wrong.status == 401 && wrong.body.contains("wrong bearer token"), "\(path)")
                let wrongQuery = try await api.get(path + "?access_token=nope")
                #expect(wrongQuery.status == 401, "\(path)")
                let basic = try await api.get(path, headers: ["Authorization": "Basic \(tokens[0])"])
                #expect(basic.status == 401, "\(path)")
            }
            #expect(try await api.get("/v1/orders", headers: ["Authorization": "Bearer \(tokens[1])"]).status == 200)
            #expect(try await api.get("/v1/orders?access_token=\(tokens[0])").status == 200)
            let header = try await api.feed(headers: ["Authorization": "Bearer \(tokens[0])"])
            #expect(header.status == 200)
            _ = try await header.events(through: "ready")
            let query = try await api.feed("/v1/orders/stream?access_token=\(tokens[1])&status=created")
            #expect(query.status == 200)
            _ = try await query.events(through: "ready")
            // The board and the health check need no token; the board passes its own on.
            #expect(try await api.get("/").status == 200)
            #expect(try await api.get("/healthz").status == 200)
            let logs = api.logs.text
            for token in tokens { #expect(!logs.contains(token)) }
        }
    }

    /// RFC 9110 §9.1: every GET route answers HEAD with the GET's status and headers and no body —
    /// the feed too, without opening one; and the board carries its security headers.
    @Test func everyGetRouteAnswersHeadAndTheBoardIsServedHardened() async throws {
        let token = "head-token-\(UUID().uuidString)"
        try await APIHarness.with(authentication: .bearer(tokens: [token]), prepare: { store in
            try store.applyUpsert(try order(10, status: "created", version: 1, extra: ["store_id": 1]))
        }) { api in
            let auth: HTTPHeaders = ["Authorization": "Bearer \(token)"]
            for (path, headers, status) in [
                ("/", HTTPHeaders(), 200), ("/healthz", HTTPHeaders(), 200), ("/openapi.json", HTTPHeaders(), 200),
                ("/v1/orders", auth, 200), ("/v1/orders", HTTPHeaders(), 401), ("/v1/orders/10", auth, 200),
                ("/v1/orders/11", auth, 404), ("/v1/orders/stream", auth, 200), ("/v1/orders/stream", HTTPHeaders(), 401),
            ] {
                let head = try await api.loop.perform(HTTPRequest(url: api.base + path, method: "HEAD", headers: headers))
                #expect(head.status == status && head.body.isEmpty, "HEAD \(path)")
                guard path != "/v1/orders/stream" else {
                    #expect(status != 200 || head.head.headers["Content-Type"] == "text/event-stream; charset=utf-8")
                    continue
                }
                let get = try await api.get(path, headers: headers)
                #expect(get.status == status, "GET \(path)")
                #expect(head.head.headers["Content-Type"] == get.headers["Content-Type"], "HEAD \(path)")
                #expect(head.head.headers["Content-Length"] == "\(get.body.utf8.count)", "HEAD \(path)")
            }
            #expect(api.server.hub.subscriberCount == 0, "a HEAD of the feed opens no feed")
            let board = try await api.get("/")
            let policy = board.headers["Content-Security-Policy"] ?? ""
            #expect(policy.contains("default-src 'self'") && policy.contains("connect-src 'self'") && policy.contains("frame-ancestors 'none'"))
            #expect(!policy.contains("unsafe-inline") && policy.contains("script-src 'sha256-") && policy.contains("style-src 'sha256-"))
            #expect(board.headers["X-Content-Type-Options"] == "nosniff" && board.headers["Referrer-Policy"] == "no-referrer")
        }
    }

    @Test func noneIsRefusedOnANonLoopbackAddress() {
        #expect(APIAuthentication.refusal(host: "0.0.0.0", authentication: .none)?.contains("api.auth") == true)
        #expect(APIAuthentication.refusal(host: "192.168.1.4", authentication: .none) != nil)
        #expect(APIAuthentication.refusal(host: "127.0.0.1", authentication: .none) == nil)
        #expect(APIAuthentication.refusal(host: "::1", authentication: .none) == nil)
        #expect(APIAuthentication.refusal(host: "0.0.0.0", authentication: .bearer(tokens: ["t"])) == nil)
    }

    @Test func theDocumentListsExactlyTheRoutesAndEachAnswersAsDocumented() async throws {
        let document = try #require(try JSONSerialization.jsonObject(with: Data(OrdersAPIDocument.json.utf8)) as? [String: Any])
        #expect(document["openapi"] as? String == "3.1.0")
        let paths = try #require(document["paths"] as? [String: [String: Any]])
        try await APIHarness.with(prepare: { store in try store.applyUpsert(try order(1, version: 1)) }) { api in
            let routes = Set(api.server.routes.map { "\($0.method.rawValue) \($0.path)" })
            let documented = Set(paths.flatMap { path, operations in operations.keys.map { "\($0.uppercased()) \(path)" } })
            #expect(routes == documented)
            let served = try await api.get("/openapi.json")
            #expect(served.status == 200 && served.body == OrdersAPIDocument.json)
            // Every documented 200 answers with its documented content type.
            for (path, operations) in paths where operations["get"] != nil {
                let operation = try #require(operations["get"] as? [String: Any])
                let responses = try #require(operation["responses"] as? [String: Any])
                let ok = try #require(responses["200"] as? [String: Any])
                let types = try #require(ok["content"] as? [String: Any]).keys
                let concrete = path.replacingOccurrences(of: "{id}", with: "1")
                if path == "/v1/orders/stream" {
                    let feed = try await api.feed(concrete)
                    #expect(feed.status == 200)
                    #expect(types.contains { feed.headers["Content-Type"]?.hasPrefix($0) == true })
                    feed.close()
                    continue
                }
                let answer = try await api.get(concrete)
                #expect(answer.status == 200, "\(path)")
                #expect(types.contains { answer.headers["Content-Type"]?.hasPrefix($0) == true }, "\(path)")
            }
        }
    }
}
