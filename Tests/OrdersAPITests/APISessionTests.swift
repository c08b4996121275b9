import AsyncSignals
import CurlHTTP
import Foundation
import SQLiteStore
@testable import OrdersAPI
import StoreModel
import TestHarnesses
import TestKit
import Testing

/// DESIGN §14: a board session with no token in any URL (`/v1/session`, an HttpOnly SameSite=Strict
/// cookie bound to the consumer's scope), `api.query_tokens: false`, tokens replaced while the API
/// runs (SIGHUP's path: feeds and sessions of a revoked token end at once), and the audit.
@Suite(.timeLimit(.minutes(3))) struct APISessionTests {
    static let file = """
        board-token-2 name=board-2 stores=2
        till-token-1 name=till-1 stores=1
        admin-token name=admin
        """

    /// `POST /v1/session` with `token`: the cookie's value.
    static func startSession(_ api: APIHarness, token: String) async throws -> String {
        let answer = try await api.loop.perform(HTTPRequest(
            url: api.base + "/v1/session", method: "POST", headers: ["Authorization": "Bearer \(token)"]))
        try #require(answer.status == 204, "POST /v1/session → \(answer.status)")
        let cookie = try #require(answer.head.headers["Set-Cookie"])
        let value = try #require(cookie.split(separator: ";").first?.split(separator: "=", maxSplits: 1).last)
        return String(value)
    }

    static func cookie(_ id: String) -> HTTPHeaders { ["Cookie": "orderlive_session=\(id)"] }

    static func prepare(_ store: SQLiteOrderStore) throws {
        for id in 1...6 { try store.applyUpsert(try order(id, version: 1, extra: ["store_id": id % 2 == 0 ? 2 : 1])) }
    }

    @Test func aSessionCookieIsHttpOnlyStrictAndCarriesTheConsumersScope() async throws {
        let credentials = APICredentials(consumers: try APIConsumers.parse(Self.file))
        try await APIHarness.with(authentication: .bearer(credentials), prepare: Self.prepare) { api in
            let started = try await api.loop.perform(HTTPRequest(
                url: api.base + "/v1/session", method: "POST", headers: ["Authorization": "Bearer board-token-2"]))
            #expect(started.status == 204)
            let cookie = try #require(started.head.headers["Set-Cookie"])
            #expect(cookie.hasPrefix("orderlive_session=") && cookie.contains("; HttpOnly") && cookie.contains("; SameSite=Strict")
                && cookie.contains("; Path=/") && cookie.contains("; Max-Age=43200") && !cookie.contains("Secure"))
            #expect(!cookie.contains("board-token-2"))
            let id = try await Self.startSession(api, token: "board-token-2")
            #expect(id.count >= 43, "256 random bits, base64url")
            #expect(credentials.sessionCount == 2)

            let who = try await api.get("/v1/session", headers: Self.cookie(id))
            let expiry = try #require(Self.expiry(who.body))
            #expect(who.status == 200 && who.body == #"{"consumer":"board-2","stores":["2"],"access":"read","via":"session","expires_at":"#
                + "\(expiry)}")
            #expect(abs(Double(expiry) - Date().timeIntervalSince1970 - 43_200) < 60)
            let listed = try await api.get("/v1/orders", headers: Self.cookie(id))
            #expect(listed.status == 200 && listed.body.contains(#""id":2"#) && !listed.body.contains(#""id":1,"#))
            #expect(try await api.get("/v1/orders/1", headers: Self.cookie(id)).status == 404)
            #expect(try await api.get("/v1/orders?store_id=1", headers: Self.cookie(id)).status == 403)
            let feed = try await api.feed(headers: Self.cookie(id))
            var view = FeedView()
            for event in try await feed.events(through: "ready") { view.apply(type: event.type, id: event.id, data: event.data) }
            #expect(Set(view.orders.keys) == ["2", "4", "6"])

            // The token by itself still works; a POST without the header never makes a session.
            #expect(try await api.get("/v1/session", headers: ["Authorization": "Bearer till-token-1"]).body.contains(#""via":"token""#))
            let noHeader = try await api.loop.perform(HTTPRequest(url: api.base + "/v1/session?access_token=board-token-2", method: "POST"))
            #expect(noHeader.status == 401 && noHeader.head.headers["Set-Cookie"] == nil)
            let byCookie = try await api.loop.perform(HTTPRequest(url: api.base + "/v1/session", method: "POST", headers: Self.cookie(id)))
            #expect(byCookie.status == 401)

            // Signing out ends the session and the feed it opened at once.
            let ended = try await api.loop.perform(HTTPRequest(url: api.base + "/v1/session", method: "DELETE", headers: Self.cookie(id)))
            #expect(ended.status == 204 && ended.head.headers["Set-Cookie"]?.contains("Max-Age=0") == true)
            #expect(try await feed.nextEvent(within: .seconds(1)) == nil, "the session's feed ends when it signs out")
            let refused = try await api.get("/v1/orders", headers: Self.cookie(id))
            #expect(refused.status == 401 && refused.body.contains("session has ended"))
            #expect(try await api.get("/v1/orders", headers: Self.cookie("made-up")).status == 401)
            #expect(credentials.sessionCount == 1)
            #expect(!api.logs.text.contains(id) && !api.logs.text.contains("board-token-2"))
            #expect(api.logs.text.contains("orders API session started") && api.logs.text.contains("board-2"))
        }
    }

    static func expiry(_ body: String) -> Int? {
        body.split(separator: ":").last.flatMap { Int($0.dropLast()) }
    }

    @Test func aSessionEndsAtItsTimeAndItsFeedWithIt() async throws {
        let clock = ManualWallClock(1_800_000_000)
        let credentials = APICredentials(consumers: try APIConsumers.parse(Self.file),
                                         settings: .init(sessionTTL: 1), now: { clock.now })
        try await APIHarness.with(authentication: .bearer(credentials), prepare: Self.prepare) { api in
            let id = try await Self.startSession(api, token: "admin-token")
            let feed = try await api.feed(headers: Self.cookie(id))
            _ = try await feed.events(through: "ready")
            // The feed was scheduled to end a second after the session started (real time on the
            // event loop); the clock moves past it for the routes.
            #expect(try await feed.nextEvent(within: .seconds(10)) == nil, "the feed ends when its session does")
            clock.advance(by: 2)
            #expect(try await api.get("/v1/orders", headers: Self.cookie(id)).status == 401)
        }
    }

    @Test func sessionsAreBoundedAndTheOldestEndsFirst() throws {
        let credentials = APICredentials(consumers: try APIConsumers.parse(Self.file), settings: .init(maximumSessions: 3))
        // Through the API's own rule: the principal of a token, then sessions for it.
        let principal = try #require(credentials.principal(presenting: "till-token-1"))
        var ids: [String] = []
        for _ in 0..<5 { ids.append(credentials.startSession(for: principal).id) }
        #expect(credentials.sessionCount == 3)
        #expect(credentials.principal(session: ids[0][...]) == nil && credentials.principal(session: ids[1][...]) == nil)
        #expect(credentials.principal(session: ids[2][...])?.consumer.name == "till-1" && credentials.principal(session: ids[4][...]) != nil)
        for _ in 0..<10_000 { _ = credentials.startSession(for: principal) }
        #expect(credentials.sessionCount == 3, "10,000 sign-ins hold three sessions")
    }

    @Test func tokensInURLsCanBeTurnedOff() async throws {
        let credentials = APICredentials(consumers: try APIConsumers.parse(Self.file), settings: .init(queryTokens: false))
        try await APIHarness.with(authentication: .bearer(credentials), prepare: Self.prepare) { api in
            let refused = try await api.get("/v1/orders?access_token=admin-token")
            #expect(refused.status == 401 && refused.body.contains("api.query_tokens"))
            #expect(try await api.get("/v1/orders/stream?access_token=admin-token").status == 401)
            #expect(try await api.get("/v1/orders", headers: ["Authorization": "Bearer admin-token"]).status == 200)
            let id = try await Self.startSession(api, token: "admin-token")
            #expect(try await api.get("/v1/orders", headers: Self.cookie(id)).status == 200)
        }
    }

    @Test func aRevokedTokensFeedsAndSessionsEndAtOnceAndOthersGoOn() async throws {
        let credentials = APICredentials(consumers: try APIConsumers.parse(Self.file))
        try await APIHarness.with(authentication: .bearer(credentials), prepare: Self.prepare) { api in
            let boardFeed = try await api.feed(headers: ["Authorization": "Bearer board-token-2"])
            _ = try await boardFeed.events(through: "ready")
            let boardSession = try await Self.startSession(api, token: "board-token-2")
            let sessionFeed = try await api.feed(headers: Self.cookie(boardSession))
            _ = try await sessionFeed.events(through: "ready")
            let tillFeed = try await api.feed(headers: ["Authorization": "Bearer till-token-1"])
            _ = try await tillFeed.events(through: "ready")
            let adminFeed = try await api.feed(headers: ["Authorization": "Bearer admin-token"])
            _ = try await adminFeed.events(through: "ready")

            // board-2 is removed; till-1's line changes its stores (its feed was opened with the old
            // scope, so it ends too); admin stays as it was.
            let replacement = try #require(api.server.replaceConsumers(try APIConsumers.parse("""
                till-token-1 name=till-1 stores=1,2
                admin-token name=admin
                new-token name=new stores=3
                """)))
            #expect(Set(replacement.revoked) == ["board-2", "till-1"] && replacement.sessionsEnded == 1)
            #expect(try await boardFeed.nextEvent(within: .seconds(1)) == nil, "a removed token's feed ends within 1 s")
            #expect(try await sessionFeed.nextEvent(within: .seconds(1)) == nil, "and its session's feed")
            #expect(try await tillFeed.nextEvent(within: .seconds(1)) == nil, "a changed line's feed ends: it had the old scope")
            try api.store.applyUpsert(try order(7, version: 1, extra: ["store_id": 1]))
            let next = try await adminFeed.nextEvent(within: .seconds(10))
            #expect(next?.type == "order.upserted", "an unchanged token's feed goes on")

            #expect(try await api.get("/v1/orders", headers: ["Authorization": "Bearer board-token-2"]).status == 401)
            #expect(try await api.get("/v1/orders", headers: Self.cookie(boardSession)).status == 401)
            #expect(try await api.get("/v1/orders", headers: ["Authorization": "Bearer new-token"]).status == 200)
            #expect(try await api.get("/v1/orders?store_id=2", headers: ["Authorization": "Bearer till-token-1"]).status == 200)
            #expect(api.logs.text.contains("orders API tokens reloaded"))
        }
    }

    @Test func everyRequestIsCountedByConsumerAndOutcomeAndRefusalsAreLoggedWithoutTokens() async throws {
        let credentials = APICredentials(consumers: try APIConsumers.parse(Self.file))
        try await APIHarness.with(authentication: .bearer(credentials), prepare: Self.prepare) { api in
            for _ in 0..<3 { _ = try await api.get("/v1/orders", headers: ["Authorization": "Bearer board-token-2"]) }
            _ = try await api.get("/v1/orders?store_id=1", headers: ["Authorization": "Bearer board-token-2"])
            _ = try await api.get("/v1/orders", headers: ["Authorization": "Bearer secret-guess-4711"])
            _ = try await api.get("/v1/orders?bogus=1", headers: ["Authorization": "Bearer admin-token"])
            let feed = try await api.feed(headers: ["Authorization": "Bearer till-token-1"])
            _ = try await feed.events(through: "ready")
            #expect(api.metric(#"orderlive_api_requests_total{consumer="board-2",outcome="ok"}"#) == 3)
            #expect(api.metric(#"orderlive_api_requests_total{consumer="board-2",outcome="forbidden"}"#) == 1)
            #expect(api.metric(#"orderlive_api_requests_total{consumer="unknown",outcome="unauthorized"}"#) == 1)
            #expect(api.metric(#"orderlive_api_requests_total{consumer="admin",outcome="bad_request"}"#) == 1)
            #expect(api.metric(#"orderlive_api_requests_total{consumer="till-1",outcome="ok"}"#) == 1)
            let logs = api.logs.text
            #expect(logs.contains("change-feed subscriber connected") && logs.contains("till-1"))
            #expect(logs.contains("refused: outside the consumer's stores") && logs.contains("refused: not authenticated"))
            for secret in ["board-token-2", "till-token-1", "admin-token", "secret-guess-4711"] { #expect(!logs.contains(secret)) }
        }
    }
}

/// A wall clock the test moves.
final class ManualWallClock: Sendable {
    private let value: Locked<Double>

    init(_ start: Double) {
        value = Locked(start)
    }

    var now: Double { value.withLock { $0 } }

    func advance(by seconds: Double) {
        value.withLock { $0 += seconds }
    }
}
