/// `api.jwt.*`: JWTs on the orders API (DESIGN §14), verified by jwt-kit. Any of the three key sources
/// turns them on; consumers then present either a token of `api.tokens_file` or a JWT.
public struct JWTConfiguration: Sendable, Hashable {
    /// A JWKS document or PEM public keys (RSA, EC P-256, Ed25519); SIGHUP re-reads it.
    public var keysFile = ""
    /// A JWKS URL, fetched through the agent's HTTP loop when a token names an unknown `kid` (at most
    /// every 30 s), the last good set kept while it fails.
    public var jwksURL = ""
    /// An HS256 secret (at least 32 bytes); SIGHUP re-reads it.
    public var hmacSecretFile = ""
    /// `iss` must be this, when set.
    public var issuer = ""
    /// `aud` must hold this, when set.
    public var audience = ""
    /// Seconds of clock difference allowed on `exp` and `nbf`.
    public var leeway = 30

    /// JWTs are off.
    public init() {}

    /// Whether any key source is set.
    public var isEnabled: Bool { !keysFile.isEmpty || !jwksURL.isEmpty || !hmacSecretFile.isEmpty }

    /// Reads `jwt.*` of `section` (`api`).
    init(reading section: ConfigurationSection) throws(ConfigurationError) {
        keysFile = try section.readableFile("jwt.keys_file", default: keysFile)
        jwksURL = section.string("jwt.jwks_url", default: jwksURL)
        if !jwksURL.isEmpty, !(jwksURL.hasPrefix("https://") || jwksURL.hasPrefix("http://")) {
            throw ConfigurationError("'api.jwt.jwks_url' must be an http:// or https:// URL, got '\(jwksURL.prefix(128))'")
        }
        hmacSecretFile = try section.readableFile("jwt.hmac_secret_file", default: hmacSecretFile)
        issuer = section.string("jwt.issuer", default: issuer)
        audience = section.string("jwt.audience", default: audience)
        leeway = try section.integer("jwt.leeway_s", minimum: 0, maximum: 3_600, default: leeway)
    }
}
