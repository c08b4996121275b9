import AsyncSignals
import AuthSession
import CurlHTTP
import Foundation
import Logging
import OrderStore
import StoreModel
import OrderSync
import OrdersAPI
import PostgresStore
import PushIngest
import ServiceLifecycle

/// The composition root (STYLE 2): builds the whole agent from the typed configuration, one step per
/// component, each below.
public enum AgentBuilder {
    /// Validates what start-up needs beyond the configuration's own checks (secrets, the listeners),
    /// opens the store and builds every component. Binds no port and starts nothing.
    public static func build(
        configuration: OrderliveConfiguration, logger: Logger,
        environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws(AgentStartError) -> AgentProgram {
        let listeners = try Listeners(configuration, logger: logger)
        let parts = try Parts(configuration: configuration, logger: logger, environment: environment)
        var services: [any Service] = [CurlLoopService(loop: parts.loop)]
        services += syncServices(parts)
        let pushServer = listeners.push.map { makePushServer($0, parts) }
        if let pushServer { services.append(pushServer) }
        let apiServer = listeners.api.map { makeOrdersAPI($0, maximumSubscribers: listeners.maximumSubscribers, parts) }
        if let apiServer { services.append(apiServer) }
        services.append(ShutdownMarker(state: parts.state))
        return AgentProgram(
            services: services, pushServer: pushServer, apiServer: apiServer, state: parts.state, metrics: parts.metrics,
            store: parts.store, session: parts.session, logger: logger)
    }

    /// The listeners' settings, checked: secrets readable, addresses free, descriptors enough.
    struct Listeners {
        var push: (host: String, port: Int, authentication: PushAuthentication)?
        var api: (host: String, port: Int, authentication: APIAuthentication)?
        /// `api.max_subscribers`, or fewer when the open-file limit holds fewer beside the push listener.
        var maximumSubscribers: Int

        init(_ configuration: OrderliveConfiguration, logger: Logger) throws(AgentStartError) {
            push = try pushSettings(configuration.ingest)
            api = try apiSettings(configuration.api)
            for (key, address) in [("ingest.listen", push.map { ($0.host, $0.port) }), ("api.listen", api.map { ($0.host, $0.port) })] {
                guard let (host, port) = address, let problem = ListenCheck.problem(host: host, port: port) else { continue }
                throw AgentStartError("cannot listen on \(host):\(port) ('\(key)'): \(problem); stop what holds it or choose another address")
            }
            // Subscribers take what the open-file limit leaves beside the push listener (never a
            // refusal for the default on a machine with a low hard limit; see OpenFileLimit).
            maximumSubscribers = configuration.api.maximumSubscribers
            guard api != nil else { return }
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
    }

    /// What every component shares: the store on its engine, the session and its HTTP loop, the
    /// metrics, the live state, and the two wake-ups (the executor's; the change feed's after commits).
    struct Parts {
        let configuration: OrderliveConfiguration
        let logger: Logger
        let metrics = AgentMetrics()
        let state = AgentState()
        /// Signalled when jobs were journaled: the executor wakes.
        let wake = WakeSignal()
        /// Signalled by the store after every commit that appended changes: the change feed's hub wakes.
        let feedWake = WakeSignal()
        let store: any OrderStoreEngine
        /// The same store when it is on PostgreSQL.
        let postgres: PostgresOrderStore?
        let loop: CurlLoop
        let session: Session

        init(configuration: OrderliveConfiguration, logger: Logger, environment: [String: String]) throws(AgentStartError) {
            self.configuration = configuration
            self.logger = logger
            let sessions = SessionFactory(configuration: configuration, environment: environment)
            do {
                try sessions.credentialStore().ensureDirectory()
            } catch {
                throw AgentStartError(error.message)
            }
            (store, postgres) = try ConfiguredStore.openForAgent(
                configuration, environment: environment, metrics: metrics, feedWake: feedWake, logger: logger)
            let (metrics, state) = (self.metrics, self.state)
            do {
                loop = try CurlLoop(logger: logger)
                session = try sessions.session(
                    loop: loop,
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
        }
    }

    /// The session refresher, the stream and the executor — on PostgreSQL behind the leadership, with
    /// the pool and the notifications — and the stream-status recorder.
    static func syncServices(_ parts: Parts) -> [any Service] {
        let (configuration, logger, metrics, state, store, wake) =
            (parts.configuration, parts.logger, parts.metrics, parts.state, parts.store, parts.wake)
        let upstream = configuration.upstream
        let executor = SyncExecutor(
            store: store,
            source: OrdersClient(
                loop: parts.loop, session: parts.session, baseURL: upstream.baseURL, ordersPath: upstream.ordersPath,
                connectTimeout: upstream.connectTimeout, requestTimeout: upstream.requestTimeout, tls: upstream.tls),
            configuration: .init(maximumAttempts: configuration.sync.maximumAttempts, pageSize: configuration.sync.pageSize),
            observe: { kind, outcome in metrics.record(kind, outcome) },
            logger: logger)
        let stream = StreamService(
            source: streamSource(configuration), loop: parts.loop, session: parts.session, store: store, wake: wake,
            observer: AgentStreamObserver(state: state, metrics: metrics), logger: logger)
        let executorService = ExecutorService(executor: executor, wake: wake, running: { running in
            state.update { $0.executorRunning = running }
        })
        let recorder = StreamStatusRecorder(state: state, stateDirectory: configuration.store.stateDirectory, logger: logger)
        guard let postgres = parts.postgres else {
            return [SessionRefreshService(session: parts.session), recorder, stream, executorService]
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
                store: postgres, changes: { feedWake.signal() }, jobs: { wake.signal() }, logger: logger)),
            LeaderOnlyService(leadership: leadership, work: [stream, executorService], logger: logger),
        ]
    }

    /// The push listener and its endpoint, journaling through the group commit.
    static func makePushServer(_ push: (host: String, port: Int, authentication: PushAuthentication), _ parts: Parts) -> PushServer {
        let ingest = parts.configuration.ingest
        let wake = parts.wake
        let journal = PushJournal(
            store: parts.store, dedupeWindow: ingest.dedupeWindow, highWaterJobs: ingest.highWaterJobs, journaled: { wake.signal() })
        let endpoint = PushEndpoint(
            configuration: .init(authentication: push.authentication, maximumBodyBytes: ingest.maximumBodyBytes,
                                 maximumNotifications: ingest.maximumNotifications),
            journal: journal, metrics: PushMetrics(factory: parts.metrics.factory), logger: parts.logger)
        return PushServer(
            configuration: .init(host: push.host, port: push.port, readTimeout: ingest.readTimeout,
                                 maximumBodyBytes: ingest.maximumBodyBytes, maximumConnections: ingest.maximumConnections),
            endpoint: endpoint,
            operations: AgentOperations(session: parts.session, store: parts.store, state: parts.state, metrics: parts.metrics),
            logger: parts.logger)
    }

    /// The orders API and its change hub.
    static func makeOrdersAPI(
        _ api: (host: String, port: Int, authentication: APIAuthentication), maximumSubscribers: Int, _ parts: Parts
    ) -> OrdersAPIServer {
        let settings = parts.configuration.api
        let hub = ChangeHub(
            configuration: .init(maximumSubscribers: maximumSubscribers, subscriberBuffer: settings.subscriberBuffer,
                                 heartbeat: settings.heartbeat, historyChanges: settings.historyChanges),
            store: parts.store, wake: parts.feedWake, metrics: FeedMetrics(factory: parts.metrics.factory), logger: parts.logger)
        return OrdersAPIServer(
            configuration: .init(host: api.host, port: api.port, authentication: api.authentication), hub: hub, logger: parts.logger)
    }
}
