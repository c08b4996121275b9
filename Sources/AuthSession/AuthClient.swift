public import CurlHTTP
public import Foundation

/// The auth API of DESIGN §3 over the curl loop: plain requests that return a token pair or say why
/// not. It holds no token state (FIELD-NOTES 5: the session applies what this returns).
public struct AuthClient: Sendable {
    /// Where the auth API lives.
    public struct Endpoints: Sendable, Hashable {
        /// The backend's base URL, e.g. `http://127.0.0.1:8070`.
        public var baseURL: String
        /// The login path.
        public var loginPath: String
        /// The refresh path.
        public var refreshPath: String
        /// The logout path.
        public var logoutPath: String

        /// Creates endpoints with DESIGN §6's default paths.
        public init(baseURL: String, loginPath: String = "/v1/auth/login", refreshPath: String = "/v1/auth/refresh",
                    logoutPath: String = "/v1/auth/logout") {
            self.baseURL = baseURL
            self.loginPath = loginPath
            self.refreshPath = refreshPath
            self.logoutPath = logoutPath
        }
    }

    private let loop: CurlLoop
    private let endpoints: Endpoints
    private let connectTimeout: Duration
    private let requestTimeout: Duration
    private let tls: TLSOptions
    private let now: @Sendable () -> Double

    /// Creates a client; `now` is the wall clock in Unix seconds (for expiry times).
    public init(
        loop: CurlLoop, endpoints: Endpoints, connectTimeout: Duration = HTTPRequest.standardConnectTimeout,
        requestTimeout: Duration = HTTPRequest.standardTimeout, tls: TLSOptions = .init(),
        now: @escaping @Sendable () -> Double = { Date().timeIntervalSince1970 }
    ) {
        self.loop = loop
        self.endpoints = endpoints
        self.connectTimeout = connectTimeout
        self.requestTimeout = requestTimeout
        self.tls = tls
        self.now = now
    }

    /// `POST login` with identifier and password.
    public func login(identifier: String, password: String) async throws(AuthError) -> TokenPair {
        let body = Self.jsonBody(["identifier": identifier, "password": password])
        return try await tokenRequest(path: endpoints.loginPath, body: body, operation: "login")
    }

    /// `POST refresh` with a refresh token; a success rotates it (the old one is then invalid).
    public func refresh(refreshToken: String) async throws(AuthError) -> TokenPair {
        let body = Self.jsonBody(["refresh_token": refreshToken])
        return try await tokenRequest(path: endpoints.refreshPath, body: body, operation: "refresh")
    }

    /// `POST logout`: revokes the session upstream, within `timeout`.
    public func logout(accessToken: String, refreshToken: String, timeout: Duration) async throws(AuthError) {
        var request = makeRequest(path: endpoints.logoutPath, body: Self.jsonBody(["refresh_token": refreshToken]))
        request.headers.add(name: "Authorization", value: "Bearer \(accessToken)")
        request.timeout = timeout
        request.connectTimeout = min(connectTimeout, timeout)
        let response = try await send(request, operation: "logout")
        guard (200..<300).contains(response.status) else {
            throw AuthError(Self.kind(ofStatus: response.status), "logout answered HTTP \(response.status)")
        }
    }

    private func tokenRequest(path: String, body: [UInt8], operation: String) async throws(AuthError) -> TokenPair {
        let response = try await send(makeRequest(path: path, body: body), operation: operation)
        guard response.status == 200 else {
            let kind = Self.kind(ofStatus: response.status)
            let reason = kind == .rejected ? "the backend rejected the \(operation) (HTTP \(response.status))"
                : "\(operation) answered HTTP \(response.status)"
            throw AuthError(kind, reason)
        }
        return try TokenPair.decode(response.body, receivedAt: now())
    }

    private func makeRequest(path: String, body: [UInt8]) -> HTTPRequest {
        HTTPRequest(
            url: endpoints.baseURL + path, method: "POST",
            headers: ["Content-Type": "application/json", "Accept": "application/json",
                      "User-Agent": "orderlive/auth"],
            body: body, connectTimeout: connectTimeout, timeout: requestTimeout, tls: tls,
            maximumResponseBytes: 1 << 20)
    }

    private func send(_ request: HTTPRequest, operation: String) async throws(AuthError) -> HTTPResponse {
        do {
            return try await loop.perform(request)
        } catch let error as CurlError {
            // curl's message names host and port, never headers or bodies.
            throw AuthError(.transient, "\(operation) failed: \(error.description)")
        } catch {
            throw AuthError(.transient, "\(operation) was cancelled")
        }
    }

    /// 401/403 end a session; 429, 5xx and anything unexpected are transient.
    static func kind(ofStatus status: Int) -> AuthError.Kind {
        status == 401 || status == 403 ? .rejected : .transient
    }

    static func jsonBody(_ fields: [String: String]) -> [UInt8] {
        let data = (try? JSONSerialization.data(withJSONObject: fields, options: [.sortedKeys])) ?? Data("{}".utf8)
        return Array(data)
    }
}
