import AsyncSignals
public import CheckedInput
public import CoreMetrics
import HTTPTypes
import Hummingbird
import HummingbirdCore
public import LocalHTTP
public import Logging
import NIOCore
import StoreModel
public import ServiceLifecycle

/// The local orders API (`api.listen`, DESIGN §11) as a `Service`: the orders, the change feed, the
/// dispatch board, `GET /healthz` and `GET /openapi.json`, on a listener of its own. It runs the
/// change hub beside the server; on graceful shutdown every feed ends cleanly and new ones get 503.
public final class OrdersAPIServer: Service, Sendable {
    /// Where it listens and who may read.
    public struct Configuration: Sendable {
        /// Where it binds and how it bounds its connections (`api.*`, ``OrdersAPIServer/settings(host:port:readTimeout:maximumConnections:allowFrom:tls:http2:)``).
        public var listener: ListenerSettings
        /// How consumers authenticate.
        public var authentication: APIAuthentication
        /// The web origins whose pages may call it (`api.cors_origins`).
        public var cors: CORSPolicy

        /// Creates a configuration.
        public init(listener: ListenerSettings = OrdersAPIServer.settings(), authentication: APIAuthentication = .none,
                    cors: CORSPolicy = CORSPolicy()) {
            self.listener = listener
            self.authentication = authentication
            self.cors = cors
        }
    }

    /// The orders API's listener settings (`api.*`) with its defaults. A request head must arrive
    /// within `readTimeout` of the connection opening or of the previous answer (a change feed, once
    /// answered, is not bound by it); `maximumConnections` counts feeds too. The API reads no request
    /// bodies: 64 KiB bounds one.
    public static func settings(
        host: String = "127.0.0.1", port: Int = 8090, readTimeout: Duration = .seconds(10),
        maximumConnections: Int = 10_240, allowFrom: [AddressRange] = [], tls: ListenerTLS? = nil,
        http2: ListenerHTTP2 = ListenerHTTP2()
    ) -> ListenerSettings {
        ListenerSettings(name: "api", key: "api.listen", host: host, port: port, readTimeout: readTimeout,
                         maximumBodyBytes: 65_536, maximumConnections: maximumConnections, allowFrom: allowFrom, tls: tls,
                         http2: http2)
    }

    /// Where it listens and who may read.
    public let configuration: Configuration
    /// The fan-out hub.
    public let hub: ChangeHub
    private let logger: Logger
    /// The listener it serves on: admission, TLS, metrics, the bound port.
    public let listener: ServedListener
    /// Authentication, scope and audit, for every route and the feed.
    let gate: APIGate

    /// The connections it holds, and which it may close to admit another.
    public var admission: ConnectionAdmission { listener.admission }

    /// Creates the server; it does not listen until ``run()``. `metricsFactory` makes
    /// `orderlive_api_requests_total`.
    public init(configuration: Configuration, hub: ChangeHub,
                listenerMetrics: ListenerMetrics = ListenerMetrics(listener: "api", factory: NOOPMetricsHandler.instance),
                metricsFactory: any MetricsFactory = NOOPMetricsHandler.instance,
                logger: Logger) {
        self.configuration = configuration
        self.hub = hub
        self.logger = logger
        gate = APIGate(authentication: configuration.authentication, audit: APIAudit(factory: metricsFactory, logger: logger))
        listener = ServedListener(
            configuration.listener, title: "orders API", section: "api", announcement: "orders API listening",
            metrics: listenerMetrics, logger: logger)
    }

    /// Loads the TLS files again (SIGHUP); see ``ServedListener/reloadTLS()``.
    @discardableResult
    public func reloadTLS() -> Bool {
        listener.reloadTLS()
    }

    /// The `# HELP` text of the families the server makes (besides the listener's and the feed's).
    public static let help = APIAudit.help

    /// Puts `consumers` in use (SIGHUP, ``APICredentials/replace(_:)``): revoked tokens are refused
    /// from now on, their sessions end, and their feeds end now (their last events written). Does
    /// nothing without `api.auth: bearer`.
    @discardableResult
    public func replaceConsumers(_ consumers: APIConsumers) -> APICredentials.Replacement? {
        guard let credentials = configuration.authentication.credentials else { return nil }
        let replacement = credentials.replace(consumers)
        let ended = hub.endSubscribers { !credentials.isCurrent($0) }
        gate.audit.replaced(replacement, feedsEnded: ended)
        return replacement
    }

    var feed: ChangeFeed {
        ChangeFeed(hub: hub, gate: gate, cors: configuration.cors, logger: logger)
    }

    /// The bound port, once listening.
    public var port: Int {
        get async { await listener.port }
    }

    /// Every route, in the order registered.
    public var routes: [Route] {
        let feed = self.feed
        let store = hub.store
        let gate = self.gate
        let logger = self.logger
        @Sendable func unreadable(_ error: any Error) -> Response {
            logger.error("the orders API cannot read the order store", metadata: ["api.reason": "\(error)"])
            return JSONError(.serviceUnavailable, "the order store cannot be read; try again", retryAfter: 1).response
        }
        return [
            Route(method: .get, path: "/") { _, _ in
                var headers = DispatchBoard.securityHeaders
                headers[.contentType] = "text/html; charset=utf-8"
                headers[.cacheControl] = "no-cache"
                return Response(status: .ok, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(string: DispatchBoard.html)))
            },
            Route(method: .get, path: "/healthz") { _, _ in Response.json(.ok, #"{"status":"ok"}"#) },
            Route(method: .get, path: "/openapi.json") { _, _ in Response.json(.ok, OrdersAPIDocument.json) },
            Route(method: .get, path: "/v1/orders") { request, _ in
                let access: APIAccess
                do throws(APIDenial) { access = try await gate.access(request, route: "/v1/orders", query: .filters) } catch {
                    return error.response
                }
                do {
                    let snapshot = try await store.snapshot(matching: access.filter)
                    var text = #"{"seq":\#(snapshot.seq),"orders":["#
                    text.reserveCapacity(snapshot.orders.reduce(64) { $0 + $1.body.utf8.count + 1 })
                    for (index, order) in snapshot.orders.enumerated() {
                        if index > 0 { text += "," }
                        text += order.body
                    }
                    text += "]}"
                    return Response.json(.ok, text)
                } catch {
                    return unreadable(error)
                }
            },
            // A feed the feed admits never reaches the router (FeedRequestHandler): this answers the refused.
            Route(method: .get, path: ChangeFeed.path) { request, _ in await feed.refusal(request) },
            Route(method: .get, path: "/v1/orders/{id}") { request, context in
                let access: APIAccess
                do throws(APIDenial) { access = try await gate.access(request, route: "/v1/orders/{id}", query: .ignored) } catch {
                    return error.response
                }
                let id = context.parameters.get("id") ?? ""
                do {
                    // Outside the consumer's stores is the same answer as missing: nothing says it exists.
                    guard let order = try await store.order(id: id), access.mayRead(order) else {
                        return JSONError(.notFound, "no order \(String(id.prefix(128))) in the store").response
                    }
                    return Response.json(.ok, order.body)
                } catch {
                    return unreadable(error)
                }
            },
        ] + sessionRoutes
    }

    /// Serves until graceful shutdown or cancellation; the hub runs beside it.
    public func run() async throws {
        let router = Router.serving(routes, first: OriginPolicyMiddleware<BasicRequestContext>(policy: configuration.cors))
        let (feed, hub, listener) = (self.feed, self.hub, self.listener)
        try await withGracefulShutdownHandler {
            try await withThrowingDiscardingTaskGroup { group in
                group.addTask { await hub.run() }
                try await listener.run(router: router) { [FeedRequestHandler(feed: feed)] }
                hub.close()
            }
        } onGracefulShutdown: {
            hub.close()
        }
    }
}
