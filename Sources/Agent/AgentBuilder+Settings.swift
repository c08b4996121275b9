import EventStream
import Foundation
import LocalHTTP
import Logging
import OrdersAPI
import PostgresStore
public import PushIngest
import WebhookSigning

/// What `build` reads from the configuration beyond its own checks: the listeners' addresses and
/// authentication, the secret files they name, the PostgreSQL settings, the event source.
extension AgentBuilder {
    /// This agent's name in the leadership row: `host:pid`.
    static func agentName() -> String {
        "\(ProcessInfo.processInfo.hostName):\(ProcessInfo.processInfo.processIdentifier)"
    }

    /// The PostgreSQL store of `store.*`: the URL (checked when read), the password from
    /// `store.postgres_password_file` or `PGPASSWORD`, and the account (`store.account`, else
    /// `auth.identifier`).
    static func postgresSettings(
        _ configuration: OrderliveConfiguration, environment: [String: String]
    ) throws(AgentStartError) -> PostgresStoreConfiguration {
        let store = configuration.store
        var password = environment["PGPASSWORD"]
        if !store.postgresPasswordFile.isEmpty {
            password = try secret("store.postgres_password_file", at: store.postgresPasswordFile)
                .trimmingCharacters(in: .whitespacesAndNewlines)
        }
        let account = store.account.isEmpty ? configuration.auth.identifier : store.account
        guard !account.isEmpty else {
            throw AgentStartError("'store.backend' is postgres but no account is set: set 'store.account' "
                + "(or 'auth.identifier', its default)")
        }
        do {
            var settings = try PostgresStoreConfiguration(url: store.postgresURL, password: password, account: account)
            settings.failover = store.failover
            settings.connectTimeout = min(settings.connectTimeout, store.failover)
            return settings
        } catch {
            throw AgentStartError("'store.postgres_url' \(error.message)")
        }
    }

    /// The event source of `upstream.*` and `stream.*`; the stream service sets its `Last-Event-ID`.
    static func streamSource(_ configuration: OrderliveConfiguration) -> EventSourceConfiguration {
        let upstream = configuration.upstream
        let stream = configuration.stream
        return EventSourceConfiguration(
            url: upstream.baseURL + upstream.eventsPath, initialDelay: stream.initialDelay,
            maximumDelay: stream.maximumDelay, resetAfter: stream.resetAfter, idleTimeout: stream.idleTimeout,
            connectTimeout: upstream.connectTimeout, tls: upstream.tls, userAgent: OrderliveVersion.userAgent)
    }

    /// The listener and the authentication of `ingest.*`, or nil when `ingest.listen` is "".
    static func pushSettings(_ ingest: IngestConfiguration) throws(AgentStartError) -> PushListener? {
        guard let (host, port) = ingest.listenAddress else { return nil }
        let authentication = try ingestAuthentication(ingest)
        if let refusal = PushServer.refusal(host: host, authentication: authentication) {
            throw AgentStartError(refusal)
        }
        return PushListener(host: host, port: port, authentication: authentication, tls: try listenerTLS(ingest.tls, "ingest"))
    }

    /// The TLS material of `section.tls.*`, loaded now (a file that does not load stops the start,
    /// naming the key and the path); nil without TLS.
    static func listenerTLS(_ tls: ListenerTLSConfiguration, _ section: String) throws(AgentStartError) -> ListenerTLS? {
        guard tls.isEnabled else { return nil }
        do {
            return try ListenerTLS(TLSFiles(certificateFile: tls.certificateFile, keyFile: tls.keyFile,
                                            clientCAFile: tls.clientCAFile, section: section + ".tls"))
        } catch {
            throw AgentStartError("configuration: \(error.description)")
        }
    }

    /// The listener and the authentication of `api.*`, or nil when `api.listen` is "".
    static func apiSettings(_ api: APIConfiguration, logger: Logger) throws(AgentStartError) -> APIListener? {
        guard let (host, port) = api.listenAddress else { return nil }
        let authentication: APIAuthentication
        var fetcher: JWKSFetcher?
        switch api.auth {
        case .none:
            authentication = .none
        case .bearer:
            guard !api.tokensFile.isEmpty || api.jwt.isEnabled else {
                throw AgentStartError("'api.auth' is bearer but 'api.tokens_file' is not set (nor any api.jwt key): "
                    + "point it at a file of consumer tokens, one per line, or configure api.jwt.keys_file, jwks_url or hmac_secret_file")
            }
            let settings = APICredentials.Settings(
                sessionTTL: Double(api.sessionTTL.components.seconds), maximumSessions: api.maximumSessions,
                queryTokens: api.queryTokens, secureCookie: api.tls.isEnabled)
            let consumers = api.tokensFile.isEmpty ? APIConsumers(tokens: []) : try consumers(api.tokensFile)
            var verifier: JWTVerifier?
            if api.jwt.isEnabled {
                fetcher = api.jwt.jwksURL.isEmpty ? nil : JWKSFetcher(url: api.jwt.jwksURL)
                verifier = try jwtVerifier(api.jwt, fetcher: fetcher, logger: logger)
            }
            authentication = .bearer(APICredentials(consumers: consumers, settings: settings, jwt: verifier))
        }
        if let refusal = APIAuthentication.refusal(host: host, authentication: authentication,
                                                   mutualTLS: !api.tls.clientCAFile.isEmpty) {
            throw AgentStartError(refusal)
        }
        return APIListener(host: host, port: port, authentication: authentication, tls: try listenerTLS(api.tls, "api"),
                           jwksFetcher: fetcher)
    }

    /// The key files of `api.jwt.*`, read now.
    static func jwtSources(_ jwt: JWTConfiguration) throws(AgentStartError) -> JWTVerifier.Sources {
        let keys = jwt.keysFile.isEmpty ? nil : try secret("api.jwt.keys_file", at: jwt.keysFile)
        let hmac = jwt.hmacSecretFile.isEmpty ? nil
            : try secret("api.jwt.hmac_secret_file", at: jwt.hmacSecretFile).trimmingCharacters(in: .whitespacesAndNewlines)
        return JWTVerifier.Sources(keysFile: keys, hmacSecret: hmac)
    }

    /// The JWT verifier of `api.jwt.*`, its key files read and checked now.
    static func jwtVerifier(_ jwt: JWTConfiguration, fetcher: JWKSFetcher?, logger: Logger) throws(AgentStartError) -> JWTVerifier {
        let settings = JWTVerifier.Settings(issuer: jwt.issuer.isEmpty ? nil : jwt.issuer, audience: jwt.audience.isEmpty ? nil : jwt.audience,
                                            leeway: Double(jwt.leeway))
        let sources = try jwtSources(jwt)
        var fetch: (@Sendable () async throws -> String)?
        if let fetcher { fetch = { try await fetcher.fetch() } }
        do throws(JWTKeysError) {
            return try JWTVerifier(sources: sources, settings: settings, fetchJWKS: fetch, fetchFailed: { fetcher?.failed() }, logger: logger)
        } catch {
            throw AgentStartError("configuration: \(error.description)")
        }
    }

    /// The consumers of `api.tokens_file` (DESIGN §14), or the start error naming the line (never a token).
    static func consumers(_ path: String) throws(AgentStartError) -> APIConsumers {
        let text = try secret("api.tokens_file", at: path)
        let consumers: APIConsumers
        do throws(TokensFileError) {
            consumers = try APIConsumers.parse(text)
        } catch {
            throw AgentStartError("'api.tokens_file': \(path) \(error.description)")
        }
        guard !consumers.consumers.isEmpty else {
            throw AgentStartError("'api.tokens_file': \(path) holds no token (one consumer per line: "
                + "TOKEN [name=NAME] [stores=1,2|*] [access=read|operate]; # starts a comment)")
        }
        return consumers
    }

    /// The push authentication of `ingest.auth`, its secrets read from `ingest.secret_file` (one a
    /// line, blank lines skipped; any of them verifies, the first signs `orderlive push`).
    public static func ingestAuthentication(_ ingest: IngestConfiguration) throws(AgentStartError) -> PushAuthentication {
        switch ingest.auth {
        case .none:
            return .none
        case .bearer, .standardWebhooks:
            guard !ingest.secretFile.isEmpty else {
                throw AgentStartError("'ingest.auth' is \(ingest.auth.rawValue) but 'ingest.secret_file' is not set: "
                    + "point it at a file holding the secret")
            }
            let lines = try secret("ingest.secret_file", at: ingest.secretFile).split(whereSeparator: \.isNewline)
                .map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
            guard !lines.isEmpty else {
                throw AgentStartError("'ingest.secret_file': \(ingest.secretFile) is empty")
            }
            if ingest.auth == .bearer { return .bearer(secrets: lines) }
            var verifiers: [StandardWebhooks] = []
            for (index, line) in lines.enumerated() {
                do {
                    verifiers.append(try StandardWebhooks(secret: line))
                } catch {
                    let which = lines.count > 1 ? " (secret \(index + 1))" : ""
                    throw AgentStartError("'ingest.secret_file'\(which): \(error.description)")
                }
            }
            return .standardWebhooks(verifiers: verifiers)
        }
    }

    /// The text of the secret file that `key` names, or the start error that names the key and the
    /// path (never the content).
    static func secret(_ key: String, at path: String) throws(AgentStartError) -> String {
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else {
            throw AgentStartError("'\(key)': cannot read \(path); check the path and its permissions")
        }
        return text
    }
}
