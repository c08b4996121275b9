import AsyncSignals
public import Foundation
import WebhookSigning

/// The credentials of `api.auth: bearer` while the agent runs (DESIGN §14): the consumers of
/// `api.tokens_file`, which SIGHUP replaces (``replace(_:)``), and the board's sessions. One object,
/// shared by every route and the change feed, so a revoked token is refused everywhere at once.
public final class APICredentials: Sendable {
    /// How sessions and tokens in URLs behave.
    public struct Settings: Sendable, Hashable {
        /// How long a session lives (`api.session_ttl_s`), seconds.
        public var sessionTTL: Double
        /// The most sessions kept (`api.max_sessions`); past it the oldest ends.
        public var maximumSessions: Int
        /// Whether `?access_token=` is accepted (`api.query_tokens`).
        public var queryTokens: Bool
        /// Whether the session cookie is `Secure` (the listener serves TLS).
        public var secureCookie: Bool

        /// Settings with DESIGN §14's defaults.
        public init(sessionTTL: Double = 43_200, maximumSessions: Int = 10_000, queryTokens: Bool = true, secureCookie: Bool = false) {
            self.sessionTTL = sessionTTL
            self.maximumSessions = maximumSessions
            self.queryTokens = queryTokens
            self.secureCookie = secureCookie
        }
    }

    private struct State {
        var consumers: APIConsumers
        var sessions: APISessions
    }

    /// The settings.
    public let settings: Settings
    /// JWTs (`api.jwt.*`), when configured.
    public let jwt: JWTVerifier?
    /// The wall clock, Unix seconds.
    let now: @Sendable () -> Double
    private let state: Locked<State>

    /// Credentials for these consumers. `now` is the wall clock in Unix seconds (tests drive it).
    public init(consumers: APIConsumers, settings: Settings = Settings(), jwt: JWTVerifier? = nil,
                now: @escaping @Sendable () -> Double = { Date().timeIntervalSince1970 }) {
        self.settings = settings
        self.jwt = jwt
        self.now = now
        state = Locked(State(consumers: consumers,
                             sessions: APISessions(limit: settings.maximumSessions, ttl: settings.sessionTTL)))
    }

    /// The consumers in use.
    public var consumers: APIConsumers { state.withLock { $0.consumers } }

    /// How many sessions are open.
    public var sessionCount: Int { state.withLock { $0.sessions.count } }

    /// The principal of a presented token, or nil.
    func principal(presenting token: Substring) -> APIPrincipal? {
        let consumers = state.withLock { $0.consumers }
        guard let (consumer, grant) = consumers.grant(presenting: token) else { return nil }
        return APIPrincipal(consumer: consumer, grant: grant)
    }

    /// The principal of an open session whose id is `id`, or nil.
    func principal(session id: Substring) -> APIPrincipal? {
        let key = SHA256Digest.of(id.utf8)
        let now = now()
        return state.withLock { $0.sessions.principal(key: key, now: now) }
    }

    /// Starts a session for `principal`: its id (for the cookie, shown nowhere else), its principal,
    /// and the keys of sessions it ended to stay within `api.max_sessions`.
    func startSession(for principal: APIPrincipal) -> (id: String, principal: APIPrincipal, ended: [[UInt8]]) {
        let id = Self.sessionID()
        let key = SHA256Digest.of(id.utf8)
        let now = now()
        let (bound, ended) = state.withLock { $0.sessions.start(principal, key: key, now: now) }
        return (id, bound, ended)
    }

    /// Ends the session whose id is `id`; returns its key when one was open.
    func endSession(id: Substring) -> [UInt8]? {
        let key = SHA256Digest.of(id.utf8)
        return state.withLock { $0.sessions.end(key: key) } ? key : nil
    }

    /// True while `principal`'s grant still names it and its session (if any) is open.
    func isCurrent(_ principal: APIPrincipal) -> Bool {
        if let expiresAt = principal.expiresAt, expiresAt <= now() { return false }
        return state.withLock { state in
            if let grant = principal.grant, !state.consumers.stillGrants(grant, to: principal.consumer) { return false }
            if let session = principal.session, !state.sessions.isOpen(key: session) { return false }
            return true
        }
    }

    /// What a replacement of the consumers changed.
    public struct Replacement: Sendable, Hashable {
        /// Consumers (by name) that were in the old set and are not, or not the same, in the new.
        public var revoked: [String]
        /// Sessions ended because their token was revoked.
        public var sessionsEnded: Int
    }

    /// Puts `consumers` in use (SIGHUP): tokens that are gone, or whose line changed, are refused
    /// from now on, and their sessions end. The caller ends their feeds (``OrdersAPIServer``).
    @discardableResult
    public func replace(_ consumers: APIConsumers) -> Replacement {
        state.withLock { state in
            let old = state.consumers
            state.consumers = consumers
            let revoked = old.entries.filter { entry in !consumers.stillGrants(entry.grant, to: entry.consumer) }
                .map(\.consumer.name)
            let ended = state.sessions.end { principal in
                guard let grant = principal.grant else { return false }
                return !consumers.stillGrants(grant, to: principal.consumer)
            }
            return Replacement(revoked: revoked, sessionsEnded: ended.count)
        }
    }

    /// A session id: 256 random bits from the system's generator, base64url without padding.
    static func sessionID() -> String {
        var generator = SystemRandomNumberGenerator()
        let bytes = (0..<32).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
        return Data(bytes).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }
}
