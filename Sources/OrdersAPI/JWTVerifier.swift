import AsyncSignals
public import Foundation
import JWTKit
public import Logging

/// Verifies the JWTs consumers present (DESIGN §14), once per request or feed connection, with
/// jwt-kit: the header's `alg` must be one the configured keys allow (never `none`, HS256 only with
/// an HMAC secret), the signature must verify, and the claims must hold at the agent's clock
/// (``JWTClaims/principal(now:rules:)``). Keys are replaced whole on SIGHUP (``replace(_:)``); the
/// JWKS of `api.jwt.jwks_url` is fetched through the agent's HTTP loop when a token names a `kid`
/// not known yet, at most once per ``refetchInterval``, and the last good set stays while it fails.
public final class JWTVerifier: Sendable {
    /// `api.jwt.*` besides the key sources.
    public struct Settings: Sendable, Hashable {
        /// `iss` must be this, when set.
        public var issuer: String?
        /// `aud` must hold this, when set.
        public var audience: String?
        /// Seconds of clock difference allowed on `exp` and `nbf` (`api.jwt.leeway_s`).
        public var leeway: Double

        /// Settings.
        public init(issuer: String? = nil, audience: String? = nil, leeway: Double = 30) {
            self.issuer = issuer
            self.audience = audience
            self.leeway = leeway
        }
    }

    private struct State {
        var sources: JWTKeySet.Sources
        /// The keys read from `sources`; the set is made from them at first use (jwt-kit's collection
        /// is an actor) and again after each change.
        var read: [JWTKeySet.Key]
        var keys: JWTKeySet?
        var lastFetch: Double?
        var fetching = false
    }

    let settings: Settings
    private let state: Locked<State>
    private let fetchJWKS: (@Sendable () async throws -> String)?
    private let now: @Sendable () -> Double
    private let logger: Logger
    private let fetchFailed: @Sendable () -> Void

    /// The shortest time between two fetches of `api.jwt.jwks_url`.
    public static let refetchInterval = 30.0

    /// A verifier over `sources`, their keys read and checked now (a start-up error names the key of
    /// the configuration); `fetchJWKS` fetches `api.jwt.jwks_url` (nil without one), and
    /// `fetchFailed` counts a fetch that failed or did not read.
    public init(
        sources: Sources, settings: Settings, fetchJWKS: (@Sendable () async throws -> String)? = nil,
        fetchFailed: @escaping @Sendable () -> Void = {}, now: @escaping @Sendable () -> Double = { Date().timeIntervalSince1970 },
        logger: Logger
    ) throws(JWTKeysError) {
        let read: [JWTKeySet.Key]
        do throws(JWTKeySet.Failure) { read = try JWTKeySet.read(sources.internal) } catch {
            throw JWTKeysError(description: error.description)
        }
        guard !read.isEmpty || fetchJWKS != nil else {
            throw JWTKeysError(description: "api.jwt: no keys: set api.jwt.keys_file, api.jwt.hmac_secret_file or api.jwt.jwks_url")
        }
        state = Locked(State(sources: sources.internal, read: read))
        self.settings = settings
        self.fetchJWKS = fetchJWKS
        self.now = now
        self.logger = logger
        self.fetchFailed = fetchFailed
    }

    /// Puts new file sources in use (SIGHUP), keeping the fetched JWKS; on failure the keys in use stay.
    public func replace(_ sources: Sources) throws(JWTKeysError) {
        var next = state.withLock { $0.sources }
        next.keysFile = sources.keysFile
        next.hmacSecret = sources.hmacSecret
        let read: [JWTKeySet.Key]
        do throws(JWTKeySet.Failure) { read = try JWTKeySet.read(next) } catch {
            throw JWTKeysError(description: error.description)
        }
        state.withLock { state in
            state.sources.keysFile = next.keysFile
            state.sources.hmacSecret = next.hmacSecret
            state.read = read
            state.keys = nil
        }
    }

    /// The set in use, made from the keys read if it is not yet.
    private func keySet() async -> JWTKeySet {
        let (keys, read) = state.withLock { ($0.keys, $0.read) }
        if let keys { return keys }
        let (made, skipped) = await JWTKeySet.make(read)
        if !skipped.isEmpty {
            logger.error("JWT keys that jwt-kit does not take were left out", metadata: ["api.jwt.kids": "\(skipped.joined(separator: ","))"])
        }
        state.withLock { state in
            if state.keys == nil { state.keys = made }
        }
        return made
    }

    /// True when `token` is shaped as a compact JWT (three base64url parts), so it is verified here
    /// rather than looked up among the tokens file's.
    static func looksLikeJWT(_ token: Substring) -> Bool {
        token.utf8.count <= JWTHeaderFields.longestToken && token.utf8.reduce(0) { $0 + ($1 == 0x2E ? 1 : 0) } == 2
    }

    /// The principal of a presented JWT, or why it is refused (401, the message naming the problem).
    func principal(_ token: Substring) async throws(APIDenial) -> APIPrincipal {
        guard token.utf8.count <= JWTHeaderFields.longestToken else { throw .unauthorized("the JWT is longer than 8 KiB") }
        guard let header = JWTHeaderFields.parse(token) else {
            throw .unauthorized("the token is neither a consumer's token nor a JWT with a readable header")
        }
        var keys = await keySet()
        if let kid = header.keyID, !keys.keyIDs.contains(kid), await refetchJWKS() {
            keys = await keySet()
        }
        guard keys.algorithms.contains(header.algorithm) else {
            let allowed = keys.algorithms.sorted().joined(separator: ", ")
            throw .unauthorized("the JWT's alg \(String(header.algorithm.prefix(16))) is not accepted here (accepted: \(allowed.isEmpty ? "none configured" : allowed))")
        }
        let claims: JWTClaims
        do {
            claims = try await keys.collection.verify(Array(token.utf8), as: JWTClaims.self, iteratingKeys: header.keyID == nil)
        } catch is DecodingError {
            throw .unauthorized("the JWT's claims do not read (exp and nbf are numbers, stores an array or \"*\")")
        } catch {
            throw .unauthorized("the JWT's signature does not verify with the configured keys")
        }
        return try claims.principal(now: now(), rules: JWTClaims.Rules(issuer: settings.issuer, audience: settings.audience,
                                                                       leeway: settings.leeway))
    }

    /// Fetches `api.jwt.jwks_url` unless one was fetched within ``refetchInterval`` or is being
    /// fetched; true when new keys are in use.
    @discardableResult
    public func refetchJWKS() async -> Bool {
        guard let fetchJWKS else { return false }
        let now = now()
        let due = state.withLock { state -> Bool in
            if state.fetching { return false }
            if let last = state.lastFetch, now - last < Self.refetchInterval, now >= last { return false }
            state.fetching = true
            state.lastFetch = now
            return true
        }
        guard due else { return false }
        defer { state.withLock { $0.fetching = false } }
        do {
            let text = try await fetchJWKS()
            var next = state.withLock { $0.sources }
            next.jwks = text
            let read: [JWTKeySet.Key]
            do throws(JWTKeySet.Failure) { read = try JWTKeySet.read(next) } catch { throw JWTKeysError(description: error.description) }
            state.withLock { state in
                state.sources.jwks = text
                state.read = read
                state.keys = nil
            }
            logger.notice("JWT keys fetched from api.jwt.jwks_url", metadata: ["api.jwt.keys": "\(read.count)"])
            return true
        } catch {
            fetchFailed()
            logger.error("api.jwt.jwks_url could not be fetched; the keys in use stay", metadata: ["api.reason": "\(error)"])
            return false
        }
    }
}

/// JWT keys that did not load: which key of the configuration and why (never a key).
public struct JWTKeysError: Error, Sendable, CustomStringConvertible {
    /// The message.
    public var description: String
}

extension JWTVerifier {
    /// The configured key sources' texts.
    public struct Sources: Sendable, Hashable {
        /// `api.jwt.keys_file`'s text.
        public var keysFile: String?
        /// `api.jwt.hmac_secret_file`'s secret.
        public var hmacSecret: String?

        /// Sources.
        public init(keysFile: String? = nil, hmacSecret: String? = nil) {
            self.keysFile = keysFile
            self.hmacSecret = hmacSecret
        }

        var `internal`: JWTKeySet.Sources { JWTKeySet.Sources(keysFile: keysFile, hmacSecret: hmacSecret) }
    }
}
