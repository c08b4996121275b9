import AsyncSignals
import AuthSession
import CurlHTTP
import EventStream
import Foundation
import Glibc
import JSONToolkit
import Logging
import OrderStore
import OrderSync
import PostgresStore
import OrdersAPI
import PushIngest
import ServiceLifecycle
import UnixSignals

#if canImport(Glibc)
import Glibc
#endif

/// Why `orderlive run` could not start: what is wrong and what to do. Reported before any port is
/// bound or any service starts.
public struct AgentStartError: Error, Sendable, CustomStringConvertible {
    /// The one-line message.
    public var description: String

    init(_ description: String) {
        self.description = description
    }
}

/// The whole program of `orderlive run`, built by ``AgentBuilder/build(configuration:logger:)`` and
/// run by ``run(handlingSignals:)``.
public struct AgentProgram: Sendable {
    /// The services in dependency order: curl loop → session refresher → stream-status recorder → stream → executor →
    /// push endpoint → shutdown marker. The group stops them in reverse: pushes are refused first, the curl loop stops last.
    public let services: [any Service]
    /// The push listener, when `ingest.listen` is set.
    public let pushServer: PushServer?
    /// The orders API listener, when `api.listen` is set.
    public let apiServer: OrdersAPIServer?
    /// Live state for readiness and status.
    public let state: AgentState
    /// The metrics registry.
    public let metrics: AgentMetrics
    /// The order store, on either engine.
    public let store: any OrderStoreEngine
    /// The session.
    public let session: Session
    let logger: Logger

    private let running = RunningGroup()

    /// Runs every service until graceful shutdown: ``shutdown()``, or with `handlingSignals`
    /// SIGTERM/SIGINT. A second signal exits the process at once (the journal is durable at every
    /// commit). A graceful shutdown that takes longer than 9 s is escalated to cancellation, and if
    /// that has not ended the process 0.8 s later, it exits with status 1, so the process is gone
    /// within 10 s whatever a dependency does.
    public func run(handlingSignals: Bool) async throws {
        var configuration = ServiceGroupConfiguration(
            services: services.map { .init(service: $0) },
            gracefulShutdownSignals: handlingSignals ? [.sigterm, .sigint] : [],
            logger: logger)
        configuration.maximumGracefulShutdownDuration = .seconds(9)
        // ServiceLifecycle's own cancellation deadline ends in a fatal error (a crash report, exit
        // 132); the deadline below exits cleanly instead.
        configuration.maximumCancellationDuration = nil
        let group = ServiceGroup(configuration: configuration)
        running.set(group)
        defer { running.set(nil) }
        let logger = self.logger
        let store = self.store
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            if handlingSignals {
                let signals = await UnixSignalsSequence(trapping: .sigterm, .sigint)
                tasks.addTask {
                    var seen = 0
                    for await _ in signals {
                        seen += 1
                        if seen == 1 {
                            logger.info("stopping: pushes now get 503; finishing the job in hand")
                            Self.exitAfterDeadline(logger: logger)
                        }
                        if seen >= 2 {
                            logger.warning("second signal: exiting at once; the journal keeps what is not applied")
                            exit(130)
                        }
                    }
                }
            }
            try await group.run()
            tasks.cancelAll()
        }
        let pending = (try? await store.counts().journalDepth).map { "\($0)" } ?? "unknown"
        logger.info("stopped", metadata: ["sync.journal_depth": "\(pending)"])
    }

    /// Starts graceful shutdown of a running ``run(handlingSignals:)``, as SIGTERM does.
    public func shutdown() async {
        guard let group = running.group else { return }
        logger.info("stopping: pushes now get 503; finishing the job in hand")
        await group.triggerGracefulShutdown()
    }

    /// The last resort behind the graceful budget: a plain thread, so a starved or stuck task pool
    /// cannot delay it.
    private static func exitAfterDeadline(logger: Logger) {
        Thread.detachNewThread {
            Thread.sleep(forTimeInterval: 9.8)
            logger.error("shutdown took longer than 9.8 s: exiting now; the journal keeps what is not applied")
            exit(1)
        }
    }
}

/// The service group of a running program, for ``AgentProgram/shutdown()``.
final class RunningGroup: Sendable {
    private let state = Locked<ServiceGroup?>(nil)

    var group: ServiceGroup? { state.withLock { $0 } }

    func set(_ group: ServiceGroup?) {
        state.withLock { $0 = group }
    }
}

/// The composition root (STYLE 2): builds the whole agent from the typed configuration.
public enum AgentBuilder {
    /// Validates what start-up needs beyond the configuration's own checks (secrets, the listener),
    /// opens the store and builds every component. Binds no port and starts nothing.
    public static func build(
        configuration: OrderliveConfiguration, logger: Logger,
        environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws(AgentStartError) -> AgentProgram {
        let push = try pushSettings(configuration.ingest)
        let api = try apiSettings(configuration.api)
        for (key, address) in [("ingest.listen", push.map { ($0.host, $0.port) }), ("api.listen", api.map { ($0.host, $0.port) })] {
            guard let (host, port) = address, let problem = ListenCheck.problem(host: host, port: port) else { continue }
            throw AgentStartError("cannot listen on \(host):\(port) ('\(key)'): \(problem); stop what holds it or choose another address")
        }
        // Subscribers take what the open-file limit leaves beside the push listener (never a refusal
        // for the default on a machine with a low hard limit; see OpenFileLimit).
        var maximumSubscribers = configuration.api.maximumSubscribers
        if api != nil {
            maximumSubscribers = try OpenFileLimit.subscribers(
                requested: maximumSubscribers, beside: push == nil ? 0 : configuration.ingest.maximumConnections)
            if maximumSubscribers < configuration.api.maximumSubscribers {
                logger.warning("the open-file limit holds fewer subscribers than api.max_subscribers; more get 503", metadata: [
                    "api.max_subscribers": "\(configuration.api.maximumSubscribers)",
                    "api.subscribers_held": "\(maximumSubscribers)",
                    "hint": "raise the open-file limit (LimitNOFILE= in the systemd unit, ulimit -n) or lower api.max_subscribers",
                ])
            }
        }
        // The store wakes the change feed's hub after every commit that appended changes.
        let feedWake = WakeSignal()
        let credentials: CredentialStore
        do {
            credentials = try AuthCommands.makeStore(configuration: configuration)
            try credentials.ensureDirectory()
        } catch {
            throw AgentStartError(error.message)
        }
        // Once per change, not per failed write (DESIGN §10: reported, never a storm).
        let healthChanged: @Sendable (StoreWriteHealth) -> Void = { health in
            if let reason = health.reason {
                logger.error("the order store cannot be written; pushes get 503 and the stream waits",
                             metadata: ["store.reason": "\(reason)"])
            } else {
                logger.notice("the order store can be written again")
            }
        }
        let metrics = AgentMetrics()
        let store: any OrderStoreEngine
        var postgres: PostgresOrderStore?
        switch configuration.store.backend {
        case .sqlite:
            do {
                // Whole-order jobs that find the journal empty are applied as they are committed
                // (one write per push or event); they count as sync jobs completed.
                store = try StateDirectory(configuration.store.stateDirectory).openStore(
                    durability: configuration.store.durability, healthChanged: healthChanged,
                    changesCommitted: { _ in feedWake.signal() },
                    immediateApply: ImmediateApply { kind, count in metrics.record(kind, .completed, count: count) })
            } catch {
                throw AgentStartError("cannot open the order database in \(configuration.store.stateDirectory): \(error)")
            }
        case .postgres:
            let engine = PostgresOrderStore(
                configuration: try postgresSettings(configuration, environment: environment), logger: logger,
                healthChanged: healthChanged, changesCommitted: { _ in feedWake.signal() })
            store = engine
            postgres = engine
        }
        let state = AgentState()
        let loop: CurlLoop
        let session: Session
        do {
            loop = try CurlLoop(logger: logger)
            session = try AuthCommands.makeSession(
                configuration: configuration, loop: loop,
                password: AuthCommands.passwordSource(configuration, environment: environment),
                observe: { event in
                    metrics.record(event)
                    if event == .refreshSucceeded { state.update { $0.tokenRefreshes += 1 } }
                }, logger: logger)
        } catch let error as CurlError {
            throw AgentStartError("cannot start the HTTP client: \(error.description)")
        } catch let error as AuthError {
            throw AgentStartError(error.message)
        } catch {
            throw AgentStartError("\(error)")
        }
        let wake = WakeSignal()
        let upstream = configuration.upstream
        let executor = SyncExecutor(
            store: store,
            source: OrdersClient(
                loop: loop, session: session, baseURL: upstream.baseURL, ordersPath: upstream.ordersPath,
                connectTimeout: upstream.connectTimeout, requestTimeout: upstream.requestTimeout, tls: upstream.tls),
            configuration: .init(maximumAttempts: configuration.sync.maximumAttempts, pageSize: configuration.sync.pageSize),
            observe: { kind, outcome in metrics.record(kind, outcome) },
            logger: logger)
        let stream = StreamService(
            source: streamSource(configuration), loop: loop, session: session, store: store, wake: wake,
            observer: AgentStreamObserver(state: state, metrics: metrics), logger: logger)
        let executorService = ExecutorService(executor: executor, wake: wake, running: { running in
            state.update { $0.executorRunning = running }
        })
        var services: [any Service] = [CurlLoopService(loop: loop)]
        if let postgres {
            // The pool is stopped after every service that uses it (the group stops in reverse order).
            let account = postgres.account
            state.update { $0.cluster = .init(backend: "postgres", account: account, role: "follower", database: "connecting") }
            let leadership = PostgresLeadership(
                store: postgres, name: Self.agentName(), logger: logger,
                changed: { status in
                    state.update {
                        $0.cluster = .init(
                            backend: "postgres", account: account, role: status.role.rawValue, epoch: status.epoch,
                            leader: status.leader, takeovers: status.takeovers, database: status.database)
                    }
                    metrics.record(status)
                })
            services += [
                PostgresPoolService(store: postgres, logger: logger),
                SessionRefreshService(session: session),
                StreamStatusRecorder(state: state, stateDirectory: configuration.store.stateDirectory, logger: logger),
                PostgresNotificationService(notifications: PostgresNotifications(
                    store: postgres, changes: { feedWake.signal() }, jobs: { wake.signal() }, logger: logger)),
                LeaderOnlyService(leadership: leadership, work: [stream, executorService], logger: logger),
            ]
        } else {
            services += [
                SessionRefreshService(session: session),
                StreamStatusRecorder(state: state, stateDirectory: configuration.store.stateDirectory, logger: logger),
                stream,
                executorService,
            ]
        }
        var server: PushServer?
        if let push {
            let ingest = configuration.ingest
            let journal = PushJournal(
                store: store, dedupeWindow: ingest.dedupeWindow,
                highWaterJobs: ingest.highWaterJobs, journaled: { wake.signal() })
            let endpoint = PushEndpoint(
                configuration: .init(authentication: push.authentication, maximumBodyBytes: ingest.maximumBodyBytes,
                                     maximumNotifications: ingest.maximumNotifications),
                journal: journal, metrics: PushMetrics(factory: metrics.factory), logger: logger)
            let pushServer = PushServer(
                configuration: .init(host: push.host, port: push.port, readTimeout: ingest.readTimeout,
                                     maximumBodyBytes: ingest.maximumBodyBytes,
                                     maximumConnections: ingest.maximumConnections),
                endpoint: endpoint,
                operations: AgentOperations(session: session, store: store, state: state, metrics: metrics),
                logger: logger)
            services.append(pushServer)
            server = pushServer
        }
        var apiServer: OrdersAPIServer?
        if let api {
            let settings = configuration.api
            let hub = ChangeHub(
                configuration: .init(maximumSubscribers: maximumSubscribers, subscriberBuffer: settings.subscriberBuffer,
                                     heartbeat: settings.heartbeat, historyChanges: settings.historyChanges),
                store: store, wake: feedWake, metrics: FeedMetrics(factory: metrics.factory), logger: logger)
            let ordersAPI = OrdersAPIServer(
                configuration: .init(host: api.host, port: api.port, authentication: api.authentication), hub: hub, logger: logger)
            services.append(ordersAPI)
            apiServer = ordersAPI
        }
        services.append(ShutdownMarker(state: state))
        return AgentProgram(
            services: services, pushServer: server, apiServer: apiServer, state: state, metrics: metrics, store: store, session: session,
            logger: logger)
    }

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
            guard let text = try? String(contentsOfFile: store.postgresPasswordFile, encoding: .utf8) else {
                throw AgentStartError("'store.postgres_password_file': cannot read \(store.postgresPasswordFile); "
                    + "check the path and its permissions")
            }
            password = text.trimmingCharacters(in: .whitespacesAndNewlines)
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
    static func pushSettings(
        _ ingest: IngestConfiguration
    ) throws(AgentStartError) -> (host: String, port: Int, authentication: PushAuthentication)? {
        guard let (host, port) = ingest.listenAddress else { return nil }
        try OpenFileLimit.ensure(connections: ingest.maximumConnections)
        let authentication = try ingestAuthentication(ingest)
        if let refusal = PushServer.refusal(host: host, authentication: authentication) {
            throw AgentStartError(refusal)
        }
        return (host, port, authentication)
    }

    /// The listener and the authentication of `api.*`, or nil when `api.listen` is "".
    static func apiSettings(
        _ api: APIConfiguration
    ) throws(AgentStartError) -> (host: String, port: Int, authentication: APIAuthentication)? {
        guard let (host, port) = api.listenAddress else { return nil }
        let authentication: APIAuthentication
        switch api.auth {
        case .none:
            authentication = .none
        case .bearer:
            guard !api.tokensFile.isEmpty else {
                throw AgentStartError("'api.auth' is bearer but 'api.tokens_file' is not set: "
                    + "point it at a file of consumer tokens, one per line")
            }
            guard let text = try? String(contentsOfFile: api.tokensFile, encoding: .utf8) else {
                throw AgentStartError("'api.tokens_file': cannot read \(api.tokensFile); check the path and its permissions")
            }
            let tokens = text.split(whereSeparator: \.isNewline)
                .map { $0.trimmingCharacters(in: .whitespaces) }
                .filter { !$0.isEmpty && !$0.hasPrefix("#") }
            guard !tokens.isEmpty else {
                throw AgentStartError("'api.tokens_file': \(api.tokensFile) holds no token (one per line; # starts a comment)")
            }
            authentication = .bearer(tokens: tokens)
        }
        if let refusal = APIAuthentication.refusal(host: host, authentication: authentication) {
            throw AgentStartError(refusal)
        }
        return (host, port, authentication)
    }

    /// The push authentication of `ingest.auth`, its secret read from `ingest.secret_file`.
    static func ingestAuthentication(_ ingest: IngestConfiguration) throws(AgentStartError) -> PushAuthentication {
        switch ingest.auth {
        case .none:
            return .none
        case .bearer, .standardWebhooks:
            guard !ingest.secretFile.isEmpty else {
                throw AgentStartError("'ingest.auth' is \(ingest.auth.rawValue) but 'ingest.secret_file' is not set: "
                    + "point it at a file holding the secret")
            }
            guard var secret = try? String(contentsOfFile: ingest.secretFile, encoding: .utf8) else {
                throw AgentStartError("'ingest.secret_file': cannot read \(ingest.secretFile); check the path and its permissions")
            }
            secret = secret.trimmingCharacters(in: .whitespacesAndNewlines)
            guard !secret.isEmpty else {
                throw AgentStartError("'ingest.secret_file': \(ingest.secretFile) is empty")
            }
            if ingest.auth == .bearer { return .bearer(secret: secret) }
            do {
                return .standardWebhooks(try StandardWebhooks(secret: secret))
            } catch {
                throw AgentStartError("'ingest.secret_file': \(error.description)")
            }
        }
    }
}
