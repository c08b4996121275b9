import AsyncSignals
import AuthSession
import CurlHTTP
public import Foundation
import LocalHTTP
public import Logging
import SQLiteStore
import StoreModel
import OrderSync
import OrdersAPI
import PostgresStore
import PushIngest
import ServiceLifecycle
import Tracing
import WebhookDelivery

/// The composition root (STYLE 2): builds the whole agent from the typed configuration, one step per
/// component, each below.
public enum AgentBuilder {
    /// Validates what start-up needs beyond the configuration's own checks (secrets, the listeners),
    /// opens the store and builds every component. Binds no port and starts nothing. `telemetry`'s
    /// services run first, so they stop last and flush what the others recorded.
    public static func build(
        configuration: OrderliveConfiguration, logger: Logger,
        environment: [String: String] = ProcessInfo.processInfo.environment, telemetry: AgentTelemetry = AgentTelemetry()
    ) throws(AgentStartError) -> AgentProgram {
        let listeners = try Listeners(configuration, logger: logger)
        let parts = try Parts(configuration: configuration, logger: logger, environment: environment, telemetry: telemetry)
        var services: [any Service] = telemetry.services
        if telemetry.metrics != nil {
            services.append(MetricsRefresh(operations: parts.operations, interval: telemetry.metricsInterval))
        }
        services += [CurlLoopService(loop: parts.loop), CurlLoopService(loop: parts.webhookLoop)]
        services += syncServices(parts)
        services.append(StoreHealthProbe(store: parts.store, changed: parts.healthWake, logger: logger))
        services.append(StoreObservationService(observation: parts.observation))
        services.append(StartupMemoryReleaseService(
            state: parts.state, observation: parts.observation, fullSyncs: parts.fullSyncs, logger: logger))
        let pushServer = listeners.push.map { makePushServer($0, parts) }
        if let pushServer { services.append(pushServer) }
        listeners.api?.jwksFetcher?.bind(loop: parts.loop, factory: parts.metrics.factory)
        let apiServer = listeners.api.map { makeOrdersAPI($0, maximumSubscribers: listeners.maximumSubscribers, parts) }
        if let apiServer { services.append(apiServer) }
        services.append(ShutdownMarker(state: parts.state))
        return AgentProgram(
            services: services, pushServer: pushServer, apiServer: apiServer,
            credentials: CredentialsReload(configuration: configuration, factory: parts.metrics.factory),
            state: parts.state, metrics: parts.metrics,
            store: parts.store, session: parts.session, stateLock: parts.stateLock, logger: logger)
    }

    /// The listeners' settings, checked: secrets readable, TLS files loaded, addresses free,
    /// descriptors enough, and the descriptor budget split between them.
    struct Listeners {
        var push: PushListener?
        var api: APIListener?
        /// `api.max_subscribers`, or fewer when the API listener holds fewer connections.
        var maximumSubscribers: Int

        init(_ configuration: OrderliveConfiguration, logger: Logger) throws(AgentStartError) {
            push = try pushSettings(configuration.ingest)
            api = try apiSettings(configuration.api, logger: logger)
            for (key, address) in [("ingest.listen", push.map { ($0.host, $0.port) }), ("api.listen", api.map { ($0.host, $0.port) })] {
                guard let (host, port) = address, let problem = ListenCheck.problem(host: host, port: port) else { continue }
                throw AgentStartError(ListenFailure(key: key, host: host, port: port, problem: problem).description)
            }
            // The descriptor budget: the push listener's connections first (all of them, or no
            // start), the orders API's what the open-file limit leaves beside them and the reserve
            // (the store, the stream, curl, logs). Neither listener can then take the other's
            // descriptors, nor the reserve: admission closes what is over its share.
            let pushConnections = push == nil ? 0 : configuration.ingest.maximumConnections
            if push != nil { try OpenFileLimit.ensure(connections: pushConnections) }
            maximumSubscribers = configuration.api.maximumSubscribers
            guard api != nil else { return }
            let apiConnections = try OpenFileLimit.share(requested: configuration.api.maximumConnections, beside: pushConnections)
            api?.maximumConnections = apiConnections
            maximumSubscribers = min(maximumSubscribers, apiConnections)
            if apiConnections < configuration.api.maximumConnections {
                logger.warning("the open-file limit holds fewer orders API connections than api.max_connections", metadata: [
                    "api.max_connections": "\(configuration.api.maximumConnections)",
                    "api.connections_held": "\(apiConnections)",
                    "api.subscribers_held": "\(maximumSubscribers)",
                    "hint": "raise the open-file limit (LimitNOFILE= in the systemd unit, ulimit -n) or lower api.max_connections",
                ])
            }
        }
    }

    /// The push listener as checked: its address, authentication and TLS.
    struct PushListener {
        var host: String
        var port: Int
        var authentication: PushAuthentication
        var tls: ListenerTLS?
    }

    /// The orders API listener as checked; `maximumConnections` is its share of the descriptors.
    struct APIListener {
        var host: String
        var port: Int
        var authentication: APIAuthentication
        var tls: ListenerTLS?
        /// Fetches `api.jwt.jwks_url`, once the HTTP loop exists.
        var jwksFetcher: JWKSFetcher?
        var maximumConnections = 0
    }

    /// What every component shares: the store on its engine, the session and its HTTP loop, the
    /// metrics, the live state, and the two wake-ups (the executor's; the change feed's after commits).
    struct Parts {
        let configuration: OrderliveConfiguration
        let logger: Logger
        let metrics: AgentMetrics
        let state = AgentState()
        /// Signalled when jobs were journaled: the executor wakes.
        let wake = WakeSignal()
        /// Signalled by the store after every commit that appended changes: the change feed's hub wakes.
        let feedWake = WakeSignal()
        /// Signalled when the store's write health changes: the probe wakes.
        let healthWake = WakeSignal()
        /// Signalled by the store after every commit that appended changes: outgoing webhooks wake.
        let webhookWake = WakeSignal()
        /// Signalled by the executor when a full sync completed: start-up memory is released again.
        let fullSyncs = WakeSignal()
        let store: any OrderStoreEngine
        /// The same store when it is on PostgreSQL.
        let postgres: PostgresOrderStore?
        /// The state directory's lock, held shared while the agent lives (SQLite).
        let stateLock: StateLock?
        let loop: CurlLoop
        /// Outgoing webhooks' own loop: a slow endpoint's transfers never share a thread with the
        /// stream's, and the thread runs under SCHED_IDLE, so on a busy machine deliveries yield the
        /// processor to pushes, the stream and the API, and catch up when it is free (they are
        /// asynchronous anyway; docs/OPERATIONS.md). Its thread starts with the first delivery: an
        /// agent without endpoints has none.
        let webhookLoop: CurlLoop
        let session: Session
        /// What readiness, status and metrics answer from.
        let observation: StoreObservation
        /// Whether the order backend answers the executor; the stream and the session bring evidence.
        let availability: BackendAvailability
        /// Spans of pushes and commits, when traces are exported.
        let tracer: (any Tracer)?

        /// Readiness, status and `/metrics` as these parts answer them.
        var operations: AgentOperations {
            AgentOperations(session: session, observation: observation, state: state, metrics: metrics)
        }

        init(
            configuration: OrderliveConfiguration, logger: Logger, environment: [String: String], telemetry: AgentTelemetry
        ) throws(AgentStartError) {
            self.configuration = configuration
            self.logger = logger
            self.tracer = telemetry.tracer
            metrics = AgentMetrics(export: telemetry.metrics)
            telemetry.losses?.bind(factory: metrics.factory)
            let sessions = SessionFactory(configuration: configuration, environment: environment)
            do {
                try sessions.credentialStore().ensureDirectory()
            } catch {
                throw AgentStartError(error.message)
            }
            (store, postgres, stateLock) = try ConfiguredStore.openForAgent(
                configuration, environment: environment, metrics: metrics, feedWake: feedWake, webhookWake: webhookWake,
                healthWake: healthWake, logger: logger)
            // Unreadable once it has not answered for its own deadline (PostgreSQL: `failover_s`;
            // SQLite: the busy timeout, 5 s) and two reads more.
            let deadline = configuration.store.backend == .postgres ? configuration.store.failover : .seconds(5)
            observation = StoreObservation(store: store, stale: deadline + .seconds(2))
            let (metrics, state) = (self.metrics, self.state)
            let availability = BackendAvailability(wake: wake, changed: { backend in
                state.update {
                    $0.backendUnavailableSince = backend.unavailableSince
                    $0.backendUnavailableReason = backend.reason
                    $0.backendPausedSeconds = backend.pausedSecondsEnded
                }
            }, logger: logger)
            self.availability = availability
            do {
                loop = try CurlLoop(logger: logger)
                webhookLoop = try CurlLoop(logger: logger, name: "orderlive-hooks", priority: .idle, startsWhenUsed: true)
                session = try sessions.session(
                    loop: loop,
                    observe: { event in
                        metrics.record(event)
                        if event == .refreshSucceeded { state.update { $0.tokenRefreshes += 1 } }
                        // A refresh or a login that succeeded is the backend answering (DESIGN §8 "Sync").
                        if event == .refreshSucceeded || event == .loginSucceeded { availability.answered(source: "session") }
                    }, logger: logger)
            } catch let error as CurlError {
                throw AgentStartError("cannot start the HTTP client: \(error.description)")
            } catch let error as AuthError {
                throw AgentStartError(error.message)
            } catch {
                throw AgentStartError("\(error)")
            }
        }
    }

    /// The session refresher, the stream and the executor — on PostgreSQL behind the leadership, with
    /// the pool and the notifications — and the stream-status recorder.
    static func syncServices(_ parts: Parts) -> [any Service] {
        let (configuration, logger, metrics, state, store, wake) =
            (parts.configuration, parts.logger, parts.metrics, parts.state, parts.store, parts.wake)
        let upstream = configuration.upstream
        let deadLettered = WakeSignal()
        let retention = DeadLetterRetention(
            store: store, limit: configuration.sync.deadLetterLimit, made: deadLettered, pruned: metrics.deadLettersPruned,
            logger: logger)
        let executor = SyncExecutor(
            store: store,
            source: OrdersClient(
                loop: parts.loop, session: parts.session, baseURL: upstream.baseURL, ordersPath: upstream.ordersPath,
                connectTimeout: upstream.connectTimeout, requestTimeout: upstream.requestTimeout, tls: upstream.tls),
            configuration: .init(
                maximumAttempts: configuration.sync.maximumAttempts, pageSize: configuration.sync.pageSize,
                retryBase: configuration.sync.retryBase, retryMaximum: configuration.sync.retryMaximum,
                probeMaximum: configuration.sync.outageProbeMaximum),
            availability: parts.availability,
            observe: { kind, outcome in
                metrics.record(kind, outcome)
                if outcome == .deadLettered { deadLettered.signal() }
                if kind == .fullSync, outcome == .completed { parts.fullSyncs.signal() }
            },
            tracer: parts.tracer, logger: logger)
        let stream = StreamService(
            source: streamSource(configuration), loop: parts.loop, session: parts.session, store: store, wake: wake,
            observer: AgentStreamObserver(state: state, metrics: metrics, availability: parts.availability), tracer: parts.tracer,
            logger: logger)
        // On SQLite another process (`orderlive dead-letters retry`) can journal jobs and cannot wake
        // this executor: it looks at the journal four times a second while idle. On PostgreSQL
        // every journal write notifies the jobs channel, which wakes it.
        let lookEvery: Duration? = parts.postgres == nil ? .milliseconds(250) : nil
        let executorService = ExecutorService(executor: executor, wake: wake, lookEvery: lookEvery, running: { running in
            state.update { $0.executorRunning = running }
        })
        let recorder = StreamStatusRecorder(state: state, stateDirectory: configuration.store.stateDirectory, logger: logger)
        let webhooks = WebhookDeliverer(
            store: store, loop: parts.webhookLoop, settings: configuration.webhooks.settings, changed: parts.webhookWake,
            observe: { endpoint, attempt, count in metrics.record(webhook: endpoint, attempt, count: count) }, tracer: parts.tracer,
            logger: logger)
        guard let postgres = parts.postgres else {
            return [SessionRefreshService(session: parts.session), recorder, stream, executorService, retention, webhooks]
        }
        // The pool is stopped after every service that uses it (the group stops in reverse order).
        let account = postgres.account
        state.update { $0.cluster = .init(backend: "postgres", account: account, role: "follower", database: "connecting") }
        let leadership = PostgresLeadership(
            store: postgres, name: agentName(), logger: logger,
            changed: { status in
                state.update {
                    $0.cluster = .init(
                        backend: "postgres", account: account, role: status.role.rawValue, epoch: status.epoch,
                        leader: status.leader, takeovers: status.takeovers, database: status.database)
                }
                metrics.record(status)
            })
        let feedWake = parts.feedWake
        return [
            PostgresPoolService(store: postgres, logger: logger),
            SessionRefreshService(session: parts.session),
            recorder,
            PostgresNotificationService(notifications: PostgresNotifications(
                store: postgres, changes: {
                    feedWake.signal()
                    parts.webhookWake.signal()
                }, jobs: { wake.signal() }, logger: logger)),
            LeaderOnlyService(
                leadership: leadership, work: [stream, executorService, retention, webhooks], state: state, logger: logger),
        ]
    }

    /// The push listener and its endpoint, journaling through the group commit.
    static func makePushServer(_ push: PushListener, _ parts: Parts) -> PushServer {
        let ingest = parts.configuration.ingest
        let wake = parts.wake
        // A push waits for its commit at most `ingest.read_timeout_ms` (a locked SQLite file), and on
        // PostgreSQL at most `failover_s` too (a database that stopped answering; DESIGN §10).
        let store = parts.configuration.store
        let deadline = store.backend == .postgres ? min(store.failover, ingest.readTimeout) : ingest.readTimeout
        let journal = PushJournal(
            store: parts.store, dedupeWindow: ingest.dedupeWindow, highWaterJobs: ingest.highWaterJobs, deadline: deadline,
            journaled: { wake.signal() })
        let endpoint = PushEndpoint(
            configuration: .init(authentication: push.authentication, maximumBodyBytes: ingest.maximumBodyBytes,
                                 maximumNotifications: ingest.maximumNotifications),
            journal: journal, metrics: PushMetrics(factory: parts.metrics.factory), tracer: parts.tracer, logger: parts.logger)
        return PushServer(
            configuration: PushServer.settings(
                host: push.host, port: push.port, readTimeout: ingest.readTimeout, maximumBodyBytes: ingest.maximumBodyBytes,
                maximumConnections: ingest.maximumConnections, allowFrom: ingest.allowFrom, tls: push.tls, http2: ingest.http2),
            endpoint: endpoint,
            operations: parts.operations,
            listenerMetrics: ListenerMetrics(listener: "push", factory: parts.metrics.factory),
            logger: parts.logger)
    }

    /// The orders API and its change hub.
    static func makeOrdersAPI(
        _ api: APIListener, maximumSubscribers: Int, _ parts: Parts
    ) -> OrdersAPIServer {
        let settings = parts.configuration.api
        let hub = ChangeHub(
            configuration: .init(maximumSubscribers: maximumSubscribers, subscriberBuffer: settings.subscriberBuffer,
                                 heartbeat: settings.heartbeat, historyChanges: settings.historyChanges),
            store: parts.store, wake: parts.feedWake, metrics: FeedMetrics(factory: parts.metrics.factory), logger: parts.logger)
        return OrdersAPIServer(
            configuration: .init(
                listener: OrdersAPIServer.settings(
                    host: api.host, port: api.port, readTimeout: settings.readTimeout, maximumConnections: api.maximumConnections,
                    allowFrom: settings.allowFrom, tls: api.tls, http2: settings.http2),
                authentication: api.authentication, cors: CORSPolicy(origins: Set(settings.corsOrigins))),
            hub: hub, listenerMetrics: ListenerMetrics(listener: "api", factory: parts.metrics.factory),
            metricsFactory: parts.metrics.factory, logger: parts.logger)
    }
}
