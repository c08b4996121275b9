public import CurlHTTP

/// `upstream.*`: where the order backend is and how to reach it.
public struct UpstreamConfiguration: Sendable, Hashable {
    /// The backend's base URL.
    public var baseURL = "http://127.0.0.1:8070"
    /// The event stream path.
    public var eventsPath = "/v1/events"
    /// The login path.
    public var loginPath = "/v1/auth/login"
    /// The refresh path.
    public var refreshPath = "/v1/auth/refresh"
    /// The logout path.
    public var logoutPath = "/v1/auth/logout"
    /// The orders path.
    public var ordersPath = "/v1/orders"
    /// How long connecting may take.
    public var connectTimeout = HTTPRequest.standardConnectTimeout
    /// How long one API request may take.
    public var requestTimeout = HTTPRequest.standardTimeout
    /// Extra CA bundle (PEM) for TLS, or "".
    public var caFile = ""
    /// A `sha256//<base64>` public-key pin, or "".
    public var pinnedPublicKey = ""

    /// TLS options for CurlHTTP.
    public var tls: TLSOptions { TLSOptions(caFile: caFile, pinnedPublicKey: pinnedPublicKey) }

    /// The built-in defaults.
    public init() {}

    /// Reads and validates `upstream.base_url` (an http(s) URL; trailing slashes dropped),
    /// `events_path`, `login_path`, `refresh_path`, `logout_path`, `orders_path` (each starting with
    /// `/`), `connect_timeout_ms`, `request_timeout_ms`, `ca_file` (readable) and
    /// `pinned_public_key` (`sha256//<base64>`).
    public init(reading section: ConfigurationSection) throws(ConfigurationError) {
        baseURL = section.string("base_url", default: baseURL)
        if let problem = HTTPURLCheck.problem(baseURL) {
            throw ConfigurationError("'upstream.base_url': \(problem)")
        }
        while baseURL.hasSuffix("/") { baseURL.removeLast() }
        eventsPath = try section.path("events_path", default: eventsPath)
        loginPath = try section.path("login_path", default: loginPath)
        refreshPath = try section.path("refresh_path", default: refreshPath)
        logoutPath = try section.path("logout_path", default: logoutPath)
        ordersPath = try section.path("orders_path", default: ordersPath)
        connectTimeout = try section.milliseconds("connect_timeout_ms", minimum: 1, default: connectTimeout)
        requestTimeout = try section.milliseconds("request_timeout_ms", minimum: 1, default: requestTimeout)
        caFile = try section.readableFile("ca_file", default: caFile)
        pinnedPublicKey = section.string("pinned_public_key", default: pinnedPublicKey)
        if !pinnedPublicKey.isEmpty, !pinnedPublicKey.hasPrefix("sha256//") {
            throw ConfigurationError("'upstream.pinned_public_key' must look like sha256//<base64>")
        }
    }
}
