import AsyncSignals
import CurlHTTP
import Foundation
import SQLiteStore
@testable import OrdersAPI
import StoreModel
import TestHarnesses
import TestKit
import Testing

/// DESIGN §14 JWTs, minted by PyJWT (not by the code under test) and verified by jwt-kit: each
/// algorithm the agent accepts, and every way a token must be refused — with a 401 that says why and
/// no crash.
@Suite(.timeLimit(.minutes(3))) struct JWTTests {
    static func claims(sub: String = "screen-7", stores: String = #"["2"]"#, exp: Double? = Date().timeIntervalSince1970 + 600,
                       extra: String = "") -> String {
        var fields = [#""sub":"\#(sub)""#, #""stores":\#(stores)"#, #""scope":"orders:read""#]
        if let exp { fields.append(#""exp":\#(Int64(exp))"#) }
        if !extra.isEmpty { fields.append(extra) }
        return "{" + fields.joined(separator: ",") + "}"
    }

    static func prepare(_ store: SQLiteOrderStore) throws {
        for id in 1...6 { try store.applyUpsert(try order(id, version: 1, extra: ["store_id": id % 2 == 0 ? 2 : 1])) }
    }

    static func verifier(_ mint: JWTMint, settings: JWTVerifier.Settings = .init(),
                         fetch: (@Sendable () async throws -> String)? = nil, failed: @escaping @Sendable () -> Void = {}) throws -> JWTVerifier {
        try JWTVerifier(sources: .init(keysFile: try mint.publicPEM(), hmacSecret: mint.hmacSecret), settings: settings,
                        fetchJWKS: fetch, fetchFailed: failed, logger: quietLogger)
    }

    static func get(_ api: APIHarness, _ token: String, _ path: String = "/v1/orders") async throws -> (status: Int, body: String) {
        let answer = try await api.get(path, headers: ["Authorization": "Bearer \(token)"])
        return (answer.status, answer.body)
    }

    @Test func eachAcceptedAlgorithmReadsItsStoresAndEveryBadTokenIs401() async throws {
        let mint = try await JWTMint.make()
        defer { try? FileManager.default.removeItem(atPath: mint.directory) }
        let verifier = try Self.verifier(mint, settings: .init(issuer: "https://backend.example", audience: "orderlive", leeway: 30))
        let credentials = APICredentials(consumers: try APIConsumers.parse("file-token name=file stores=1"), jwt: verifier)
        let good = Self.claims(extra: #""iss":"https://backend.example","aud":["orderlive","other"]"#)
        try await APIHarness.with(authentication: .bearer(credentials), prepare: Self.prepare) { api in
            for (key, alg) in [("rsa", "RS256"), ("ec", "ES256"), ("ed", "EdDSA"), ("hmac", "HS256")] {
                let token = try await mint.token(good, key: key, alg: alg)
                let answer = try await Self.get(api, token)
                #expect(answer.status == 200, "\(alg): \(answer.body)")
                #expect(answer.body.contains(#""id":2"#) && !answer.body.contains(#""id":1,"#), "\(alg) sees store 2 only")
                #expect(try await Self.get(api, token, "/v1/orders/1").status == 404)
                #expect(try await Self.get(api, token, "/v1/orders?store_id=1").status == 403)
                let who = try await Self.get(api, token, "/v1/session")
                #expect(who.body.contains(#""consumer":"screen-7","stores":["2"],"access":"read","via":"jwt""#), "\(who.body)")
            }
            #expect(try await Self.get(api, "file-token").status == 200, "the tokens file still works beside JWTs")

            let now = Date().timeIntervalSince1970
            let refused: [(String, String, String, String)] = [
                ("expired", Self.claims(exp: now - 120, extra: #""iss":"https://backend.example","aud":"orderlive""#), "rsa", "expired"),
                ("not yet valid", Self.claims(extra: #""iss":"https://backend.example","aud":"orderlive","nbf":\#(Int64(now + 600))"#), "rsa", "not valid yet"),
                ("no exp", Self.claims(exp: nil, extra: #""iss":"https://backend.example","aud":"orderlive""#), "rsa", "no exp"),
                ("wrong iss", Self.claims(extra: #""iss":"https://evil.example","aud":"orderlive""#), "ec", "iss"),
                ("wrong aud", Self.claims(extra: #""iss":"https://backend.example","aud":"someone-else""#), "ec", "aud"),
                ("no stores", #"{"sub":"x","scope":"orders:read","exp":\#(Int64(now + 600)),"iss":"https://backend.example","aud":"orderlive"}"#, "ed", "stores"),
                ("no scope", #"{"sub":"x","stores":"*","exp":\#(Int64(now + 600)),"iss":"https://backend.example","aud":"orderlive"}"#, "ed", "scope"),
                ("alg none", good, "none", "alg none"),
                ("HS256 signed with the RSA public key", good, "confused", "signature"),
            ]
            for (name, claims, key, reason) in refused where !claims.isEmpty {
                let token = try await mint.token(claims, key: key, alg: key == "rsa" ? "RS256" : key == "ec" ? "ES256" : "EdDSA")
                let answer = try await Self.get(api, token)
                #expect(answer.status == 401 && answer.body.contains(reason), "\(name): \(answer.status) \(answer.body)")
                let feed = try await api.get("/v1/orders/stream", headers: ["Authorization": "Bearer \(token)"])
                #expect(feed.status == 401, "\(name) on the feed")
            }
            let lenient = try await mint.token(Self.claims(exp: now - 10, extra: #""iss":"https://backend.example","aud":"orderlive""#), key: "rsa", alg: "RS256")
            #expect(try await Self.get(api, lenient).status == 200, "exp 10 s ago is within api.jwt.leeway_s")
            let tampered = try await mint.token(good, key: "rsa", alg: "RS256")
            let parts = tampered.split(separator: ".").map(String.init)
            let widened = Data(Self.claims(stores: #""*""#).utf8).base64EncodedString()
                .replacingOccurrences(of: "=", with: "").replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            let forged = [parts[0], widened, parts[2]].joined(separator: ".")
            #expect(try await Self.get(api, forged).status == 401, "a payload changed under the signature")
            for garbage in ["a.b.c", "..", "eyJhbGciOiJSUzI1NiJ9.e30.", String(repeating: "A", count: 9_000) + ".e30.x",
                            "eyJ" + String(repeating: "x", count: 12_000) + ".a.b", "%%.%%.%%"] {
                let status = try await Self.get(api, garbage).status
                // A header past the listener's head limit is refused before any token is read (431).
                #expect(status == 401 || (garbage.count > 10_000 && status == 431), "\(garbage.prefix(40)): \(status)")
            }
            #expect(!api.logs.text.contains(tampered), "a JWT is never logged")
            #expect(api.metric(#"orderlive_api_requests_total{consumer="jwt",outcome="ok"}"#) >= 4)
        }
    }

    @Test func anUnknownKidFetchesTheJWKSOnceAndAFailingURLKeepsTheLastGoodKeys() async throws {
        let mint = try await JWTMint.make()
        defer { try? FileManager.default.removeItem(atPath: mint.directory) }
        let first = try await mint.jwks(["rsa": "k1"])
        let second = try await mint.jwks(["rsa": "k1", "ec": "k2"])
        let served = Locked((documents: [first, second], fetches: 0, down: false))
        let failures = Locked(0)
        let clock = ManualWallClock(Date().timeIntervalSince1970)
        let verifier = try JWTVerifier(
            sources: .init(), settings: .init(),
            fetchJWKS: {
                try served.withLock { served -> String in
                    served.fetches += 1
                    if served.down { throw JWTMint.MintFailure(description: "connection refused") }
                    return served.documents.count > 1 ? served.documents.removeFirst() : served.documents[0]
                }
            },
            fetchFailed: { failures.withLock { $0 += 1 } }, now: { clock.now }, logger: quietLogger)
        let credentials = APICredentials(consumers: APIConsumers(tokens: []), jwt: verifier)
        try await APIHarness.with(authentication: .bearer(credentials), prepare: Self.prepare) { api in
            let rsa = try await mint.token(Self.claims(exp: clock.now + 600), key: "rsa", alg: "RS256", kid: "k1")
            #expect(try await Self.get(api, rsa).status == 200, "the first kid fetches the JWKS")
            let ec = try await mint.token(Self.claims(exp: clock.now + 600), key: "ec", alg: "ES256", kid: "k2")
            #expect(try await Self.get(api, ec).status == 401, "k2 is not in the JWKS, and a refetch within 30 s is not made")
            #expect(served.withLock { $0.fetches } == 1)
            clock.advance(by: 31)
            #expect(try await Self.get(api, ec).status == 200, "30 s later, an unknown kid fetches the JWKS again")
            #expect(served.withLock { $0.fetches } == 2)
            #expect(try await Self.get(api, ec).status == 200)
            #expect(served.withLock { $0.fetches } == 2, "a known kid fetches nothing")

            served.withLock { $0.down = true }
            clock.advance(by: 31)
            let unknown = try await mint.token(Self.claims(exp: clock.now + 600), key: "ed", alg: "EdDSA", kid: "k3")
            #expect(try await Self.get(api, unknown).status == 401)
            #expect(failures.withLock { $0 } == 1, "the failed fetch is counted")
            let (rsaAfter, ecAfter) = (try await Self.get(api, rsa).status, try await Self.get(api, ec).status)
            #expect(rsaAfter == 200 && ecAfter == 200, "the last good keys stay while the URL fails")
        }
    }

    @Test func aFeedOpenedWithAJWTEndsAtItsExpAndASessionEndsWithIt() async throws {
        let mint = try await JWTMint.make()
        defer { try? FileManager.default.removeItem(atPath: mint.directory) }
        let credentials = APICredentials(consumers: APIConsumers(tokens: []), jwt: try Self.verifier(mint, settings: .init(leeway: 0)))
        try await APIHarness.with(authentication: .bearer(credentials), prepare: Self.prepare) { api in
            let token = try await mint.token(Self.claims(exp: Date().timeIntervalSince1970 + 10), key: "ec", alg: "ES256")
            let session = try await APISessionTests.startSession(api, token: token)
            let feed = try await api.feed(headers: ["Authorization": "Bearer \(token)"])
            var view = FeedView()
            for event in try await feed.events(through: "ready") { view.apply(type: event.type, id: event.id, data: event.data) }
            #expect(Set(view.orders.keys) == ["2", "4", "6"])
            let who = try await api.get("/v1/session", headers: APISessionTests.cookie(session))
            #expect(who.body.contains(#""via":"session""#), "\(who.body)")
            #expect(try await feed.nextEvent(within: .seconds(25)) == nil, "the feed ends at the JWT's exp")
            #expect(try await api.get("/v1/orders", headers: APISessionTests.cookie(session)).status == 401, "and so does its session")
        }
    }

    /// The claims mapping is ours: every claim set either makes a consumer within the rules, or a 401.
    @Test func theClaimsMappingHoldsItsRules() throws {
        let rules = JWTClaims.Rules(issuer: "i", audience: "a", leeway: 5)
        var claims = JWTClaims(exp: 1_000, nbf: 900, iss: "i", aud: .several(["b", "a"]), sub: "till-3", stores: .listed(["1", "2"]),
                               scope: "orders:read orders:operate")
        let principal = try claims.principal(now: 990, rules: rules)
        #expect(principal.consumer == APIConsumer(name: "till-3", stores: ["1", "2"], access: .operate) && principal.expiresAt == 1_000)
        #expect(throws: APIDenial.self) { try claims.principal(now: 1_005, rules: rules) }
        #expect((try? claims.principal(now: 1_004, rules: rules)) != nil, "leeway")
        #expect(throws: APIDenial.self) { try claims.principal(now: 894, rules: rules) }
        claims.stores = .listed([])
        #expect(throws: APIDenial.self) { try claims.principal(now: 990, rules: rules) }
        claims.stores = .all
        #expect(try claims.principal(now: 990, rules: rules).consumer.stores == nil)
        claims.sub = "has space"
        #expect(throws: APIDenial.self) { try claims.principal(now: 990, rules: rules) }
        claims.sub = "ok"
        claims.exp = .infinity
        #expect(throws: APIDenial.self) { try claims.principal(now: 990, rules: rules) }
        #expect(JWTHeaderFields.parse("eyJhbGciOiJFUzI1NiIsImtpZCI6IngifQ.e30.sig") == JWTHeaderFields(algorithm: "ES256", keyID: "x"))
        #expect(JWTHeaderFields.parse("eyJhbGciOjF9.e30.sig") == nil, "alg must be a string")
        #expect(JWTHeaderFields.parse("e30.e30") == nil)
    }
}
