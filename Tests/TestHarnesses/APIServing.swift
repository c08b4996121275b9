public import AsyncSignals
public import CurlHTTP
public import LocalHTTP
import Foundation
public import Logging
public import OrdersAPI
public import Prometheus
public import StoreModel
public import TestKit

/// A real orders API on 127.0.0.1:0 over a store of either engine, and a curl client: the
/// engine-independent half of ``APIHarness``. The test writes the store and signals `wake` after each
/// write, as the agent's commit hook (SQLite) or NOTIFY (PostgreSQL) does.
public struct APIServing: Sendable {
    public let server: OrdersAPIServer
    public let loop: CurlLoop
    public let wake: WakeSignal
    /// The registry the server's and the hub's metrics are made in.
    public let registry: PrometheusCollectorRegistry
    public let logs: CapturedLogs
    public let port: Int

    /// `http://127.0.0.1:<port>`.
    public var base: String { "http://127.0.0.1:\(port)" }

    /// Serves `store` until `body` returns. `wake` is the hub's (the store's commit hook signals it
    /// when it has one); logs are kept from `level` up.
    public static func with<Result: Sendable>(
        store: any ChangeFeedSource, wake: WakeSignal = WakeSignal(), authentication: APIAuthentication,
        cors: CORSPolicy = CORSPolicy(), hub configuration: ChangeHub.Configuration = .init(),
        level: Logger.Level = .info, tls: ListenerTLS? = nil, http2: ListenerHTTP2 = ListenerHTTP2(),
        _ body: (APIServing) async throws -> Result
    ) async throws -> Result {
        let logs = CapturedLogs()
        let logger = logs.logger(level: level)
        let registry = PrometheusCollectorRegistry()
        let hub = ChangeHub(
            configuration: configuration, store: store, wake: wake,
            metrics: FeedMetrics(factory: PrometheusMetricsFactory(registry: registry)), logger: logger)
        let server = OrdersAPIServer(
            configuration: .init(listener: OrdersAPIServer.settings(port: 0, tls: tls, http2: http2), authentication: authentication, cors: cors), hub: hub,
            listenerMetrics: ListenerMetrics(listener: "api", factory: PrometheusMetricsFactory(registry: registry)),
            metricsFactory: PrometheusMetricsFactory(registry: registry), logger: logger)
        return try await withGracefulServing(server) {
            // The hub's feeds end before the server's graceful shutdown, which would wait for them.
            defer { hub.close() }
            let port = await server.port
            return try await CurlLoop.withLoop(logger: quietLogger) { loop in
                try await body(APIServing(server: server, loop: loop, wake: wake, registry: registry, logs: logs, port: port))
            }
        }
    }

    /// `GET path` with `headers`: status and body.
    public func get(_ path: String, headers: HTTPHeaders = [:]) async throws -> (status: Int, body: String) {
        let response = try await loop.perform(HTTPRequest(url: base + path, headers: headers))
        return (response.status, String(decoding: response.body, as: UTF8.self))
    }

    /// Opens the feed at `path` with `headers`.
    public func feed(_ path: String = "/v1/orders/stream", headers: HTTPHeaders = [:]) async throws -> FeedReader {
        try await FeedReader(loop: loop, url: base + path, headers: headers)
    }

    /// The ids a `GET /v1/orders…` lists.
    public func ids(_ path: String, headers: HTTPHeaders) async throws -> Set<String>? {
        let (status, body) = try await get(path, headers: headers)
        guard status == 200, let object = try JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any],
              let orders = object["orders"] as? [[String: Any]] else { return nil }
        return Set(orders.map { "\($0["id"] ?? "")" })
    }
}
