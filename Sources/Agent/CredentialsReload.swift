import CoreMetrics
import Logging
import OrdersAPI
import PushIngest

/// What SIGHUP re-reads besides the TLS files (DESIGN §14): `api.tokens_file`, the key files of
/// `api.jwt.*` and `ingest.secret_file`. A file that loads replaces the credentials in use at once — a removed token
/// is refused, its feeds end and its sessions with them; a push secret may be rotated with overlap,
/// two lines in the file. A file that does not load leaves the last good credentials in use, is
/// logged naming the key (never a secret) and counted in
/// `orderlive_credentials_reload_failures_total{key}`.
struct CredentialsReload: Sendable {
    /// The configuration's paths and modes.
    let configuration: OrderliveConfiguration
    private let failures: [String: Counter]

    /// The keys a reload reads, the `key` label's values.
    static let keys = ["api.tokens_file", "api.jwt", "ingest.secret_file"]

    /// The `# HELP` text of the family made here.
    static let help = [
        "orderlive_credentials_reload_failures_total": "SIGHUP reloads of a credentials file that did not load; the last good credentials stayed in use",
    ]

    init(configuration: OrderliveConfiguration, factory: any MetricsFactory) {
        self.configuration = configuration
        var failures: [String: Counter] = [:]
        for key in Self.keys {
            failures[key] = Counter(label: "orderlive_credentials_reload_failures_total", dimensions: [("key", key)], factory: factory)
        }
        self.failures = failures
    }

    /// Re-reads what the running listeners authenticate with; returns the keys that failed.
    @discardableResult
    func reload(pushServer: PushServer?, apiServer: OrdersAPIServer?, logger: Logger) -> [String] {
        var failed: [String] = []
        if let verifier = apiServer?.configuration.authentication.credentials?.jwt {
            do throws(AgentStartError) {
                let sources = try AgentBuilder.jwtSources(configuration.api.jwt)
                do throws(JWTKeysError) { try verifier.replace(sources) } catch { throw AgentStartError(error.description) }
                logger.notice("JWT keys reloaded", metadata: ["config.key": "api.jwt"])
            } catch {
                failed.append("api.jwt")
                logger.error("SIGHUP: the api.jwt key files did not load; the keys in use stay", metadata: [
                    "config.key": "api.jwt", "config.reason": "\(error.description)",
                ])
            }
        }
        if let apiServer, configuration.api.auth == .bearer, !configuration.api.tokensFile.isEmpty {
            do throws(AgentStartError) {
                let consumers = try AgentBuilder.consumers(configuration.api.tokensFile)
                apiServer.replaceConsumers(consumers)
            } catch {
                failed.append("api.tokens_file")
                logger.error("SIGHUP: api.tokens_file did not load; the tokens in use stay", metadata: [
                    "config.key": "api.tokens_file", "config.reason": "\(error.description)",
                ])
            }
        }
        if let pushServer, configuration.ingest.auth != .none {
            do throws(AgentStartError) {
                pushServer.replaceAuthentication(try AgentBuilder.ingestAuthentication(configuration.ingest))
                logger.notice("push secrets reloaded", metadata: ["config.key": "ingest.secret_file"])
            } catch {
                failed.append("ingest.secret_file")
                logger.error("SIGHUP: ingest.secret_file did not load; the secrets in use stay", metadata: [
                    "config.key": "ingest.secret_file", "config.reason": "\(error.description)",
                ])
            }
        }
        for key in failed { failures[key]?.increment() }
        return failed
    }
}
