import CurlHTTP
import Foundation
import OrdersAPI
import TestHarnesses
import Testing

/// `api.cors_origins` (DESIGN §14): a page of a listed origin may call the API and read the feed; any
/// other origin gets no CORS header, so its browser keeps the answer from it. Answers vary by Origin.
@Suite(.timeLimit(.minutes(1))) struct CORSTests {
    static let dashboard = "https://dash.example.com"
    static let stranger = "https://evil.example.net"

    @Test func aListedOriginIsAllowedAndAnyOtherGetsNoCORSHeader() async throws {
        let token = "cors-token-\(UUID().uuidString)"
        try await APIHarness.with(authentication: .bearer(tokens: [token]), cors: CORSPolicy(origins: [Self.dashboard])) { api in
            func preflight(_ origin: String) async throws -> HTTPResponse {
                try await api.loop.perform(HTTPRequest(url: api.base + "/v1/orders", method: "OPTIONS", headers: [
                    "Origin": origin, "Access-Control-Request-Method": "GET",
                    "Access-Control-Request-Headers": "authorization,last-event-id",
                ]))
            }
            let allowed = try await preflight(Self.dashboard)
            #expect(allowed.status == 204)
            #expect(allowed.head.headers["Access-Control-Allow-Origin"] == Self.dashboard)
            #expect(allowed.head.headers["Access-Control-Allow-Methods"]?.contains("GET") == true)
            let headers = allowed.head.headers["Access-Control-Allow-Headers"]?.lowercased() ?? ""
            #expect(headers.contains("authorization") && headers.contains("last-event-id"))
            #expect(allowed.head.headers["Vary"] == "Origin")
            let refused = try await preflight(Self.stranger)
            #expect(refused.status == 403 && refused.head.headers["Access-Control-Allow-Origin"] == nil)

            let auth = "Bearer \(token)"
            let read = try await api.get("/v1/orders", headers: ["Origin": Self.dashboard, "Authorization": auth])
            #expect(read.status == 200 && read.headers["Access-Control-Allow-Origin"] == Self.dashboard)
            #expect(read.headers["Vary"] == "Origin")
            let other = try await api.get("/v1/orders", headers: ["Origin": Self.stranger, "Authorization": auth])
            #expect(other.headers["Access-Control-Allow-Origin"] == nil && other.headers["Vary"] == "Origin")
            let denied = try await api.get("/v1/orders", headers: ["Origin": Self.dashboard])
            #expect(denied.status == 401 && denied.headers["Access-Control-Allow-Origin"] == Self.dashboard,
                    "a refusal reaches the listed page too, so it can say why")

            let feed = try await api.feed(headers: ["Origin": Self.dashboard, "Authorization": auth])
            #expect(feed.status == 200 && feed.headers["Access-Control-Allow-Origin"] == Self.dashboard)
            _ = try await feed.events(through: "ready")
            feed.close()
            let strangerFeed = try await api.feed(headers: ["Origin": Self.stranger, "Authorization": auth])
            #expect(strangerFeed.headers["Access-Control-Allow-Origin"] == nil)
            strangerFeed.close()
        }
    }

    @Test func withNoOriginsListedNoPageOfAnotherOriginIsAllowed() async throws {
        try await APIHarness.with { api in
            let read = try await api.get("/v1/orders", headers: ["Origin": Self.dashboard])
            #expect(read.status == 200 && read.headers["Access-Control-Allow-Origin"] == nil)
            let preflight = try await api.loop.perform(HTTPRequest(url: api.base + "/v1/orders", method: "OPTIONS", headers: [
                "Origin": Self.dashboard, "Access-Control-Request-Method": "GET",
            ]))
            #expect(preflight.status == 403 && preflight.head.headers["Access-Control-Allow-Origin"] == nil)
        }
    }

    @Test(arguments: ["https://dash.example.com", "http://127.0.0.1:8080", "https://[::1]:8443"])
    func originsThatRead(_ origin: String) {
        #expect(CORSPolicy.problem(with: origin) == nil)
    }

    @Test(arguments: ["dash.example.com", "https://dash.example.com/", "https://*.example.com", "*", "ftp://x", "https://"])
    func originsThatDoNotRead(_ origin: String) {
        #expect(CORSPolicy.problem(with: origin) != nil)
    }
}
