import AuthSession
/// `auth.*`: who logs in and how the session is kept.
public struct AuthConfiguration: Sendable, Hashable {
    /// The login identifier.
    public var identifier = ""
    /// A file holding the password (systemd `LoadCredential=`, container secrets), or "".
    public var passwordFile = ""
    /// Refresh when the access token expires within this window.
    public var refreshAhead = Session.Dependencies.standardRefreshAhead
    /// When set, credentials are encrypted at rest with the key in this file.
    public var credentialsKeyFile = ""

    /// The built-in defaults.
    public init() {}

    /// Reads and validates `auth.identifier`, `password_file` (readable),
    /// `refresh_ahead_s` and `credentials_key_file` (readable).
    public init(reading section: ConfigurationSection) throws(ConfigurationError) {
        identifier = section.string("identifier", default: identifier)
        passwordFile = try section.readableFile("password_file", default: passwordFile)
        refreshAhead = try section.seconds("refresh_ahead_s", minimum: 0, default: refreshAhead)
        credentialsKeyFile = try section.readableFile("credentials_key_file", default: credentialsKeyFile)
    }
}
