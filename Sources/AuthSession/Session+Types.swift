public import Foundation

/// The session's vocabulary: its states, what a caller sees of it, and what it is built from.
extension Session {
    /// DESIGN §8's auth states.
    public enum State: String, Sendable, Hashable {
        /// Reading stored credentials.
        case hydrating
        /// No usable session.
        case unauthenticated
        /// A session exists (its access token may need a refresh on next use).
        case authenticated
        /// A refresh or login is in flight.
        case refreshing
        /// Credentials exist but cannot be read now.
        case locked
    }

    /// What `status` shows: never a token.
    public struct Snapshot: Sendable, Hashable {
        /// The state.
        public var state: State
        /// The user id, when known.
        public var userID: String?
        /// The role, when known.
        public var role: String?
        /// The stores, when known.
        public var storeIDs: [String]
        /// Access-token expiry, Unix seconds.
        public var accessExpiresAt: Double?
        /// Refresh-token expiry, Unix seconds.
        public var refreshExpiresAt: Double?
    }

    /// What the session needs around it.
    public struct Dependencies: Sendable {
        /// The auth API.
        public var client: AuthClient
        /// Where credentials persist.
        public var store: CredentialStore
        /// The identifier for a login with `password`.
        public var identifier: String?
        /// Reads the password when a login is needed (a file or the environment); nil when none.
        public var password: @Sendable () -> String?
        /// Refresh when the access token expires within this many seconds.
        public var refreshAhead: Duration
        /// Wall clock, Unix seconds.
        public var now: @Sendable () -> Double
        /// Waits between transient retries.
        public var sleep: @Sendable (Duration) async throws -> Void
        /// A random number in [0, 1] for jitter.
        public var random: @Sendable () -> Double
        /// Told of every login and refresh outcome (for metrics).
        public var observe: @Sendable (AuthEvent) -> Void

        /// How long before its expiry an access token is refreshed, unless told otherwise (`auth.refresh_ahead_s`).
        public static let standardRefreshAhead = Duration.seconds(60)

        /// Creates dependencies with real time and randomness.
        public init(
            client: AuthClient, store: CredentialStore, identifier: String?,
            password: @escaping @Sendable () -> String? = { nil }, refreshAhead: Duration = Dependencies.standardRefreshAhead,
            now: @escaping @Sendable () -> Double = { Date().timeIntervalSince1970 },
            sleep: @escaping @Sendable (Duration) async throws -> Void = { try await Task.sleep(for: $0) },
            random: @escaping @Sendable () -> Double = { Double.random(in: 0...1) },
            observe: @escaping @Sendable (AuthEvent) -> Void = { _ in }
        ) {
            self.client = client
            self.store = store
            self.identifier = identifier
            self.password = password
            self.refreshAhead = refreshAhead
            self.now = now
            self.sleep = sleep
            self.random = random
            self.observe = observe
        }
    }
}

/// A login or refresh outcome, as the session's observer sees it.
public enum AuthEvent: String, Sendable, Hashable, CaseIterable {
    /// A refresh rotated the tokens.
    case refreshSucceeded = "refresh_succeeded"
    /// A refresh failed transiently (network, 5xx); it is retried.
    case refreshFailed = "refresh_failed"
    /// The backend rejected the refresh token: the session is over.
    case refreshRejected = "refresh_rejected"
    /// A login succeeded.
    case loginSucceeded = "login_succeeded"
    /// A login failed transiently.
    case loginFailed = "login_failed"
    /// The backend rejected the identifier or password.
    case loginRejected = "login_rejected"
}
