import AsyncSignals
public import CoreMetrics
public import CheckedInput
import Hummingbird
import HummingbirdCore
public import LocalHTTP
public import Logging
import NIOCore
public import ServiceLifecycle
import Synchronization

/// Whether the agent can do its work, for `GET /readyz`.
public struct Readiness: Sendable, Hashable {
    /// True when the store is open and the executor runs.
    public var isReady: Bool
    /// The JSON body: the reason, and the auth and stream states.
    public var json: String

    /// Creates a readiness answer.
    public init(isReady: Bool, json: String) {
        self.isReady = isReady
        self.json = json
    }
}

/// What the operations endpoints report; the agent provides it.
public protocol OperationsProvider: Sendable {
    /// `GET /readyz`.
    func readiness() async -> Readiness
    /// `GET /api/status`: the JSON of `orderlive status --json`.
    func statusJSON() async -> String
    /// `GET /metrics`: Prometheus text exposition.
    func metricsText() async -> String
}

/// The push listener (`ingest.listen`) as a `Service`: `POST /api/push`, `GET /healthz`,
/// `GET /readyz`, `GET /metrics`, `GET /api/status` and `GET /openapi.json` (DESIGN §4). On graceful
/// shutdown pushes are answered 503 at once, and the server stops accepting connections.
public final class PushServer: Service, Sendable {
    /// The push listener's settings (`ingest.*`) with its defaults: where it binds, how long a request
    /// head and then its body may take to arrive, the largest body read (the bounds handler and the
    /// endpoint share it), the connections held at once (at the limit a new one closes the oldest idle
    /// or headless one, and is refused only when all are busy), the peers allowed, TLS and HTTP/2.
    public static func settings(
        host: String = "127.0.0.1", port: Int = 8080, readTimeout: Duration = .seconds(10),
        maximumBodyBytes: Int = 262_144, maximumConnections: Int = 1_024, allowFrom: [AddressRange] = [],
        tls: ListenerTLS? = nil, http2: ListenerHTTP2 = ListenerHTTP2()
    ) -> ListenerSettings {
        ListenerSettings(name: "push", key: "ingest.listen", host: host, port: port, readTimeout: readTimeout,
                         maximumBodyBytes: maximumBodyBytes, maximumConnections: maximumConnections,
                         allowFrom: allowFrom, tls: tls, http2: http2)
    }

    /// `ingest.auth: none` is refused unless the listener is on loopback (DESIGN §4).
    public static func refusal(host: String, authentication: PushAuthentication) -> String? {
        guard case .none = authentication else { return nil }
        return Listener.isLoopback(host) ? nil : "ingest.auth is none but ingest.listen is not a loopback address (\(host)): "
            + "set ingest.auth to bearer or standard-webhooks with ingest.secret_file, or listen on 127.0.0.1"
    }

    private let endpoint: PushEndpoint
    private let operations: any OperationsProvider
    /// The listener it serves on: admission, TLS, metrics, the bound port.
    public let listener: ServedListener

    /// The connections it holds, and which it may close to admit another.
    public var admission: ConnectionAdmission { listener.admission }

    /// Creates the server; it does not listen until ``run()``.
    public init(configuration: ListenerSettings, endpoint: PushEndpoint, operations: any OperationsProvider,
                listenerMetrics: ListenerMetrics = ListenerMetrics(listener: "push", factory: NOOPMetricsHandler.instance),
                logger: Logger) {
        self.endpoint = endpoint
        self.operations = operations
        listener = ServedListener(
            configuration, title: "push", section: "ingest", announcement: "push endpoint listening",
            metrics: listenerMetrics, logger: logger) { reason in
            if reason == .refused { endpoint.connectionRefused() }
        }
    }

    /// Loads the TLS files again (SIGHUP): new handshakes use them; on failure the material in use
    /// stays, and the error is logged naming the key and path and counted. False on failure; true
    /// when reloaded or without TLS.
    @discardableResult
    public func reloadTLS() -> Bool {
        listener.reloadTLS()
    }

    /// Verifies pushes with `authentication` from now on (SIGHUP re-read `ingest.secret_file`).
    public func replaceAuthentication(_ authentication: PushAuthentication) {
        endpoint.replaceAuthentication(authentication)
    }

    /// The bound port, once listening.
    public var port: Int {
        get async { await listener.port }
    }

    /// Every route this listener serves, in the order registered: the push endpoint, the operations
    /// endpoints and the OpenAPI document (DESIGN §4). ``run()`` registers exactly these, and answers a
    /// known path asked with another method `405` with `Allow`.
    public var routes: [Route] {
        let endpoint = self.endpoint
        let operations = self.operations
        return [
            Route(method: .post, path: "/api/push") { request, _ in await endpoint.respond(to: request) },
            Route(method: .get, path: "/healthz") { _, _ in Response.json(.ok, #"{"status":"ok"}"#) },
            Route(method: .get, path: "/readyz") { _, _ in
                let readiness = await operations.readiness()
                return Response.json(readiness.isReady ? .ok : .serviceUnavailable, readiness.json)
            },
            Route(method: .get, path: "/api/status") { _, _ in Response.json(.ok, await operations.statusJSON()) },
            Route(method: .get, path: "/metrics") { _, _ in
                var headers = HTTPFields()
                headers[.contentType] = "text/plain; version=0.0.4; charset=utf-8"
                return Response(status: .ok, headers: headers,
                                body: ResponseBody(byteBuffer: ByteBuffer(string: await operations.metricsText())))
            },
            Route(method: .get, path: "/openapi.json") { _, _ in Response.json(.ok, OpenAPIDocument.json) },
        ]
    }

    /// Serves until graceful shutdown or cancellation. The journal's commit carrier runs beside the
    /// listener and is stopped after it, so every push accepted before the listener closed is
    /// committed and answered before this returns.
    public func run() async throws {
        let router = Router.serving(routes)
        let (endpoint, listener) = (self.endpoint, self.listener)
        let journal = endpoint.journal
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await journal.carryCommits() }
            defer { journal.stopCarrying() }
            try await withGracefulShutdownHandler {
                try await listener.run(router: router) { [PushRequestHandler(endpoint: endpoint)] }
            } onGracefulShutdown: {
                endpoint.beginDraining()
            }
        }
    }
}
