import AsyncSignals
public import CurlHTTP
public import LocalHTTP
import Foundation
import Logging
public import SQLiteStore
import StoreModel
public import OrdersAPI
public import Prometheus
public import TestKit

/// A real orders API on 127.0.0.1:0 over a real store in a temporary directory (woken after each
/// commit exactly as in the agent), and a curl client.
public struct APIHarness: Sendable {
    public let store: SQLiteOrderStore
    public let server: OrdersAPIServer
    public let loop: CurlLoop
    public let registry: PrometheusCollectorRegistry
    public let logs: CapturedLogs
    public let port: Int
    public let directory: String
    /// The CA the client trusts when the API speaks TLS.
    public let clientTLS: TLSOptions

    /// `http://127.0.0.1:<port>`, or `https://` when the API speaks TLS.
    public var base: String { "\(clientTLS.caFile.isEmpty ? "http" : "https")://127.0.0.1:\(port)" }

    public static func with<Result: Sendable>(
        authentication: APIAuthentication = .none,
        cors: CORSPolicy = CORSPolicy(),
        hub configuration: ChangeHub.Configuration = .init(),
        prepare: (SQLiteOrderStore) throws -> Void = { _ in },
        tls: (listener: ListenerTLS, caFile: String)? = nil,
        http2: ListenerHTTP2 = ListenerHTTP2(),
        _ body: (APIHarness) async throws -> Result
    ) async throws -> Result {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("api-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let wake = WakeSignal()
        let store = try SQLiteOrderStore(path: directory + "/orderlive.sqlite", changesCommitted: { _ in wake.signal() })
        try prepare(store)
        return try await APIServing.with(
            store: store, wake: wake, authentication: authentication, cors: cors, hub: configuration, level: .trace,
            tls: tls?.listener, http2: http2
        ) { serving in
            try await body(APIHarness(
                store: store, server: serving.server, loop: serving.loop, registry: serving.registry, logs: serving.logs,
                port: serving.port, directory: directory, clientTLS: TLSOptions(caFile: tls?.caFile ?? "")))
        }
    }

    /// `GET path` (with `headers`): status and body.
    public func get(_ path: String, headers: HTTPHeaders = [:]) async throws -> (status: Int, body: String, headers: HTTPHeaders) {
        let response = try await loop.perform(HTTPRequest(url: base + path, headers: headers, tls: clientTLS))
        return (response.status, String(decoding: response.body, as: UTF8.self), response.head.headers)
    }

    /// Opens the feed at `path` (default the whole feed).
    public func feed(_ path: String = "/v1/orders/stream", headers: HTTPHeaders = [:]) async throws -> FeedReader {
        try await FeedReader(loop: loop, url: base + path, headers: headers, tls: clientTLS)
    }

    /// `GET /v1/orders` (+ query) as a view: seq and orders by id.
    public func orders(_ query: String = "") async throws -> (seq: Int64, orders: [String: String]) {
        let (status, body, _) = try await get("/v1/orders" + query)
        guard status == 200, let object = try JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any],
              let seq = object["seq"] as? NSNumber, let orders = object["orders"] as? [[String: Any]] else {
            throw FeedEnded(waitingFor: "GET /v1/orders\(query) → 200", received: ["\(status) \(body.prefix(200))"])
        }
        var byID: [String: String] = [:]
        for order in orders { byID["\(order["id"] ?? "")"] = FeedView.canonical(order) }
        return (seq.int64Value, byID)
    }

    /// The value of a Prometheus sample, 0 when absent.
    public func metric(_ name: String) -> Double {
        prometheusSamples(registry.emitToString())?[name] ?? 0
    }
}
