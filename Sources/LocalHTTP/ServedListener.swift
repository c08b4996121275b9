import AsyncSignals
public import Hummingbird
public import Logging
import NIOCore

/// One listener's owner, as Hummingbird's `Application` owns its server: its settings, its
/// connection admission (with the closure log), its metrics, its TLS material and reload, the port it
/// bound. ``run(router:handlers:)`` builds the channel pipeline (``LocalListener``) and serves until
/// the caller's graceful shutdown. Both front doors, the push listener and the orders API, hold one.
public final class ServedListener: Sendable {
    /// Where it binds and how it bounds its connections.
    public let settings: ListenerSettings
    /// The connections it holds, and which it may close to admit another.
    public let admission: ConnectionAdmission
    /// Its connection and TLS metrics.
    public let metrics: ListenerMetrics
    private let announcement: Logger.Message
    private let logger: Logger
    private let bound = OneShot<Int>()

    /// A listener called `title` in the lines about the connections it closes (`push`, `orders API`),
    /// whose keys are under `section` (`ingest`, `api`), logging `announcement` once bound; `closed`
    /// also hears each connection it closes itself.
    public init(
        _ settings: ListenerSettings, title: String, section: String, announcement: Logger.Message, metrics: ListenerMetrics,
        logger: Logger, closed: @escaping @Sendable (ConnectionClosure) -> Void = { _ in }
    ) {
        self.settings = settings
        self.metrics = metrics
        self.announcement = announcement
        self.logger = logger
        let closures = ConnectionClosureLog(
            title: title, section: section, limit: settings.maximumConnections, metrics: metrics, logger: logger)
        admission = ConnectionAdmission(limit: settings.maximumConnections, allowFrom: settings.allowFrom) { reason in
            closures.record(reason)
            closed(reason)
        }
        if let tls = settings.tls { metrics.recordCertificateExpiry(tls.expiry) }
    }

    /// The bound port, once listening.
    public var port: Int {
        get async { await bound.value }
    }

    /// Loads the TLS files again (SIGHUP); see ``LocalListener/reload(_:listener:metrics:logger:)``.
    /// True when reloaded or without TLS.
    @discardableResult
    public func reloadTLS() -> Bool {
        guard let tls = settings.tls else { return true }
        return LocalListener.reload(tls, listener: settings.name, metrics: metrics, logger: logger)
    }

    /// Serves `router` with the listener's own `handlers` last in each connection's pipeline, until
    /// the application returns (graceful shutdown, which the caller arranges). Logs the address once
    /// bound; a bind that fails throws ``ListenFailure``.
    public func run(
        router: Router<BasicRequestContext>, handlers: @escaping @Sendable () -> [any RemovableChannelHandler] = { [] }
    ) async throws {
        let (settings, bound, logger, announcement, metrics) = (self.settings, self.bound, self.logger, self.announcement, self.metrics)
        try await LocalListener.run(settings, router: router, admission: admission, metrics: metrics, handlers: handlers, onRunning: { port in
            bound.give(port)
            logger.info(announcement, metadata: [
                "\(settings.name).listen": "\(settings.host):\(port)", "\(settings.name).tls": "\(settings.tls != nil)",
            ])
        }, logger: logger)
    }
}
