import WebhookSigning

/// A consumer as one request authenticated it (DESIGN §14): who, through which grant, and until when.
/// The feed keeps it for the life of a subscription, so a grant revoked on SIGHUP, a session signed
/// out, or credentials that expire end the subscriptions they opened.
struct APIPrincipal: Sendable, Hashable {
    /// Who.
    var consumer: APIConsumer
    /// The SHA-256 of the token it presented, or the token its session was started with; nil for
    /// `api.auth: none`, which nothing revokes.
    var grant: [UInt8]?
    /// The session it came through, by the SHA-256 of the session's id; nil for a token.
    var session: [UInt8]?
    /// When its credentials end (a session's end, a JWT's `exp`), Unix seconds; nil: only when revoked.
    var expiresAt: Double?
    /// It presented a JWT (the `consumer` label of the metrics is then `jwt`: names are not bounded).
    var isJWT = false

    /// Whoever reaches a listener that asks for no token.
    static let anyone = APIPrincipal(consumer: .anyone)

    /// How it authenticated: `session`, `jwt`, `token` (or `none`, for ``anyone``).
    var via: String {
        if session != nil { return "session" }
        if isJWT { return "jwt" }
        return grant == nil ? "none" : "token"
    }
}

/// The board's sessions (DESIGN §14): each a random id, known here only by its SHA-256, bound to the
/// principal that started it, until `ttl` seconds after it started. At most `limit` are kept: a new
/// one past the limit ends the oldest, so no amount of signing in grows memory. Pure (time is given),
/// for the tests; ``APICredentials`` holds it under its lock.
struct APISessions: Sendable {
    private struct Session: Sendable {
        var principal: APIPrincipal
        var serial: UInt64
    }

    /// The most sessions kept.
    let limit: Int
    /// How long a session lives, seconds.
    let ttl: Double
    private var sessions: [[UInt8]: Session] = [:]
    /// Keys in the order their sessions started; a key whose session ended is skipped when reached.
    private var order: [(key: [UInt8], serial: UInt64)] = []
    private var orderStart = 0
    private var nextSerial: UInt64 = 0

    init(limit: Int, ttl: Double) {
        self.limit = max(1, limit)
        self.ttl = max(1, ttl)
    }

    /// How many sessions are open.
    var count: Int { sessions.count }

    /// Starts a session for `principal` at `now` under `key` (the SHA-256 of its id); returns the
    /// session's principal and the keys of the sessions it ended to stay within ``limit``.
    mutating func start(_ principal: APIPrincipal, key: [UInt8], now: Double) -> (principal: APIPrincipal, ended: [[UInt8]]) {
        var bound = principal
        bound.session = key
        bound.expiresAt = min(principal.expiresAt ?? .infinity, now + ttl)
        nextSerial &+= 1
        sessions[key] = Session(principal: bound, serial: nextSerial)
        order.append((key, nextSerial))
        var ended: [[UInt8]] = []
        while sessions.count > limit, orderStart < order.count {
            let oldest = order[orderStart]
            orderStart += 1
            if sessions[oldest.key]?.serial == oldest.serial {
                sessions[oldest.key] = nil
                ended.append(oldest.key)
            }
        }
        compact()
        return (bound, ended)
    }

    /// The principal of the session under `key`, if it is open at `now` (an expired one ends here).
    mutating func principal(key: [UInt8], now: Double) -> APIPrincipal? {
        guard let session = sessions[key] else { return nil }
        if let expiresAt = session.principal.expiresAt, expiresAt <= now {
            sessions[key] = nil
            return nil
        }
        return session.principal
    }

    /// True while the session under `key` has not been ended (expiry is checked by the caller).
    func isOpen(key: [UInt8]) -> Bool {
        sessions[key] != nil
    }

    /// Ends the session under `key`; true when one was open.
    @discardableResult
    mutating func end(key: [UInt8]) -> Bool {
        sessions.removeValue(forKey: key) != nil
    }

    /// Ends every session whose principal `ends` says; returns their keys.
    mutating func end(where ends: (APIPrincipal) -> Bool) -> [[UInt8]] {
        let keys = sessions.filter { ends($0.value.principal) }.map(\.key)
        for key in keys { sessions[key] = nil }
        compact()
        return keys
    }

    /// Drops the start of ``order`` that was walked or whose sessions ended, once it is most of it.
    private mutating func compact() {
        if order.count > 2 * limit + 64 {
            order = order[orderStart...].filter { sessions[$0.key]?.serial == $0.serial }
            orderStart = 0
        }
    }
}
