import AsyncSignals
public import Foundation
import HTTPTypes
import Hummingbird
import NIOCore

/// A user the Sandbox accepts at login.
public struct SandboxUser: Sendable, Hashable {
    /// The login identifier.
    public var identifier: String
    /// The password.
    public var password: String
    /// The user id returned in token pairs.
    public var userID: Int
    /// The role returned in token pairs.
    public var role: String
    /// The store ids returned in token pairs.
    public var storeIDs: [Int]

    /// Creates a user.
    public init(identifier: String, password: String, userID: Int, role: String = "courier", storeIDs: [Int] = [1, 2]) {
        self.identifier = identifier
        self.password = password
        self.userID = userID
        self.role = role
        self.storeIDs = storeIDs
    }

    /// The demo user: `courier@example.com` / `orderlive-demo`.
    public static let demo = SandboxUser(identifier: "courier@example.com", password: "orderlive-demo", userID: 5)
}

/// How the Sandbox's auth API behaves (DESIGN §3: login, rotating refresh with reuse detection, logout).
public struct SandboxAuthConfiguration: Sendable {
    /// The users that can log in.
    public var users: [SandboxUser]
    /// How long an access token is valid; sub-second values are allowed (tests).
    public var accessTokenLifetime: Duration
    /// How long a refresh token is valid.
    public var refreshTokenLifetime: Duration
    /// Whether `GET /v1/events` requires a valid bearer token.
    public var requiresAuthentication: Bool
    /// The wall clock token expiry is judged by, in Unix seconds; tests inject one they move.
    public var now: @Sendable () -> Double

    /// Creates a configuration.
    public init(
        users: [SandboxUser] = [.demo],
        accessTokenLifetime: Duration = .seconds(900),
        refreshTokenLifetime: Duration = .seconds(2_592_000),
        requiresAuthentication: Bool = false,
        now: @escaping @Sendable () -> Double = { Date().timeIntervalSince1970 }
    ) {
        self.users = users
        self.accessTokenLifetime = accessTokenLifetime
        self.refreshTokenLifetime = refreshTokenLifetime
        self.requiresAuthentication = requiresAuthentication
        self.now = now
    }
}

/// How many requests each auth endpoint has received.
public struct SandboxAuthCounters: Sendable, Hashable {
    /// `POST /v1/auth/login`
    public var logins = 0
    /// `POST /v1/auth/refresh`
    public var refreshes = 0
    /// `POST /v1/auth/logout`
    public var logouts = 0
    /// Event-stream requests answered 401.
    public var rejectedStreams = 0
    /// Refreshes that presented an already rotated token (answered 401 `token_reused`): a client whose
    /// earlier refresh reached the backend but whose answer was lost on the way back.
    public var reusedRefreshes = 0
}

/// The Sandbox's token state. Thread rule: all state behind one `Locked`.
final class SandboxAuthority: Sendable {
    private struct AccessToken {
        var userID: Int
        var expiresAt: Double
    }

    private struct RefreshToken {
        var user: SandboxUser
        var family: Int
        var expiresAt: Double
        var used = false
    }

    private struct State {
        var access: [String: AccessToken] = [:]
        var refresh: [String: RefreshToken] = [:]
        var revokedFamilies: Set<Int> = []
        var nextFamily = 1
        var failingRefreshes: [Int] = []
        var failingLogins: [Int] = []
        var counters = SandboxAuthCounters()
    }

    let configuration: SandboxAuthConfiguration
    private let state = Locked(State())

    init(configuration: SandboxAuthConfiguration) {
        self.configuration = configuration
    }

    var counters: SandboxAuthCounters { state.withLock { $0.counters } }

    func failRefreshes(_ statuses: [Int]) { state.withLock { $0.failingRefreshes += statuses } }
    func failLogins(_ statuses: [Int]) { state.withLock { $0.failingLogins += statuses } }

    /// Forgets every access token issued so far: the next request with one answers 401.
    func expireAccessTokens() {
        state.withLock { $0.access.removeAll() }
    }

    func revokeAllRefreshTokens() {
        state.withLock { state in
            for token in state.refresh.values { state.revokedFamilies.insert(token.family) }
        }
    }

    /// The user id of a valid, unexpired access token.
    func validate(accessToken: String) -> Int? {
        let now = configuration.now()
        return state.withLock { state in
            guard let token = state.access[accessToken], token.expiresAt > now else { return nil }
            return token.userID
        }
    }

    func countRejectedStream() { state.withLock { $0.counters.rejectedStreams += 1 } }

    enum Answer {
        case pair(String)
        case status(Int, String)
    }

    func login(identifier: String, password: String) -> Answer {
        state.withLock { state in
            state.counters.logins += 1
            if !state.failingLogins.isEmpty {
                let status = state.failingLogins.removeFirst()
                return .status(status, #"{"error":"unavailable"}"#)
            }
            guard let user = configuration.users.first(where: { $0.identifier == identifier && $0.password == password })
            else { return .status(401, #"{"error":"invalid_credentials"}"#) }
            let family = state.nextFamily
            state.nextFamily += 1
            return .pair(issue(for: user, family: family, state: &state))
        }
    }

    func refresh(token: String) -> Answer {
        let now = configuration.now()
        return state.withLock { state in
            state.counters.refreshes += 1
            if !state.failingRefreshes.isEmpty {
                let status = state.failingRefreshes.removeFirst()
                return .status(status, #"{"error":"unavailable"}"#)
            }
            guard var record = state.refresh[token], !state.revokedFamilies.contains(record.family),
                  record.expiresAt > now
            else { return .status(401, #"{"error":"invalid_grant"}"#) }
            if record.used {
                // Reuse of a rotated token: the whole family is revoked (DESIGN §3, reuse detection).
                state.revokedFamilies.insert(record.family)
                state.counters.reusedRefreshes += 1
                return .status(401, #"{"error":"token_reused"}"#)
            }
            record.used = true
            state.refresh[token] = record
            return .pair(issue(for: record.user, family: record.family, state: &state))
        }
    }

    func logout(refreshToken: String) {
        state.withLock { state in
            state.counters.logouts += 1
            if let record = state.refresh[refreshToken] { state.revokedFamilies.insert(record.family) }
        }
    }

    private func issue(for user: SandboxUser, family: Int, state: inout State) -> String {
        let access = "at-" + Self.randomToken()
        let refresh = "rt-" + Self.randomToken()
        let now = configuration.now()
        let expiresIn = Double(configuration.accessTokenLifetime.components.seconds)
            + Double(configuration.accessTokenLifetime.components.attoseconds) / 1e18
        let refreshLifetime = Double(configuration.refreshTokenLifetime.components.seconds)
        state.access[access] = AccessToken(userID: user.userID, expiresAt: now + expiresIn)
        state.refresh[refresh] = RefreshToken(user: user, family: family, expiresAt: now + refreshLifetime)
        let stores = user.storeIDs.map(String.init).joined(separator: ",")
        return #"{"access_token":"\#(access)","refresh_token":"\#(refresh)","token_type":"bearer","#
            + #""expires_in":\#(expiresIn),"refresh_expires_in":\#(configuration.refreshTokenLifetime.components.seconds),"#
            + #""user_id":\#(user.userID),"role":"\#(user.role)","store_ids":[\#(stores)]}"#
    }

    private static func randomToken() -> String {
        var generator = SystemRandomNumberGenerator()
        return (0..<4).map { _ in String(generator.next() as UInt64, radix: 16) }.joined()
    }
}

extension Sandbox {
    func addAuthRoutes(to router: Router<BasicRequestContext>) {
        let authority = self.authority
        router.post("/v1/auth/login") { request, _ in
            guard let body = try? await Self.jsonObject(request),
                  let identifier = body["identifier"] as? String, let password = body["password"] as? String
            else { return Self.json(400, #"{"error":"identifier and password are required"}"#) }
            return Self.answer(authority.login(identifier: identifier, password: password))
        }
        router.post("/v1/auth/refresh") { request, _ in
            guard let body = try? await Self.jsonObject(request), let token = body["refresh_token"] as? String else {
                return Self.json(400, #"{"error":"refresh_token is required"}"#)
            }
            return Self.answer(authority.refresh(token: token))
        }
        router.post("/v1/auth/logout") { request, _ in
            if let body = try? await Self.jsonObject(request), let token = body["refresh_token"] as? String {
                authority.logout(refreshToken: token)
            }
            return Response(status: .noContent)
        }
    }

    static func bearerToken(_ request: Request) -> String? {
        guard let value = request.headers[.authorization], value.lowercased().hasPrefix("bearer ") else { return nil }
        return String(value.dropFirst(7))
    }

    private static func jsonObject(_ request: Request) async throws -> [String: Any] {
        let buffer = try await request.body.collect(upTo: 64 * 1024)
        let object = try JSONSerialization.jsonObject(with: Data(buffer.readableBytesView))
        guard let dictionary = object as? [String: Any] else { throw SandboxDrop() }
        return dictionary
    }

    private static func answer(_ answer: SandboxAuthority.Answer) -> Response {
        switch answer {
        case .pair(let body): Self.json(200, body)
        case .status(let status, let body): Self.json(status, body)
        }
    }

    static func json(_ status: Int, _ body: String) -> Response {
        var headers = HTTPFields()
        headers[.contentType] = "application/json"
        return Response(status: .init(code: status), headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(string: body)))
    }
}
