public import CheckedInput
public import CurlHTTP
public import Foundation
public import LocalHTTP
import Logging
public import SQLiteStore
public import StoreModel
import OrderSync
public import Prometheus
public import PushIngest

#if canImport(Glibc)
import Glibc
public import TestKit
#endif

/// Operations answers for the endpoint tests: ready, a fixed status, and the test's own registry.
public struct TestOperations: OperationsProvider {
    public let registry: PrometheusCollectorRegistry

    /// Operations reporting `registry`'s metrics.
    public init(registry: PrometheusCollectorRegistry) {
        self.registry = registry
    }

    public func readiness() async -> Readiness { Readiness(isReady: true, json: #"{"ready":true}"#) }
    public func statusJSON() async -> String { #"{"test":true}"# }
    public func metricsText() async -> String { registry.emitToString() }
}

/// A real push server on 127.0.0.1:0 over a real store in a temporary directory, and a curl client.
public struct PushServerHarness: Sendable {
    public let store: SQLiteOrderStore
    public let endpoint: PushEndpoint
    public let server: PushServer
    public let loop: CurlLoop
    public let registry: PrometheusCollectorRegistry
    public let logs: CapturedLogs
    public let port: Int
    public let directory: String

    public var url: String { "http://127.0.0.1:\(port)/api/push" }

    public static func with<Result: Sendable>(
        authentication: PushAuthentication = .none,
        maximumBodyBytes: Int = PushServer.settings().maximumBodyBytes,
        maximumNotifications: Int = PushEndpoint.Configuration().maximumNotifications,
        highWaterJobs: Int = 100_000,
        readTimeout: Duration = PushServer.settings().readTimeout,
        maximumConnections: Int = PushServer.settings().maximumConnections,
        allowFrom: [AddressRange] = [],
        tls: ListenerTLS? = nil,
        http2: ListenerHTTP2 = ListenerHTTP2(),
        now: @escaping @Sendable () -> Double = { Date().timeIntervalSince1970 },
        prepare: (SQLiteOrderStore) throws -> Void = { _ in },
        _ body: (PushServerHarness) async throws -> Result
    ) async throws -> Result {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("push-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let store = try SQLiteOrderStore(path: directory + "/orderlive.sqlite")
        try prepare(store)
        let logs = CapturedLogs()
        let logger = logs.logger(level: .debug)
        let registry = PrometheusCollectorRegistry()
        let journal = PushJournal(store: store, dedupeWindow: .seconds(345_600), highWaterJobs: highWaterJobs, now: now)
        let endpoint = PushEndpoint(
            configuration: .init(authentication: authentication, maximumBodyBytes: maximumBodyBytes,
                                 maximumNotifications: maximumNotifications),
            journal: journal, metrics: PushMetrics(factory: PrometheusMetricsFactory(registry: registry)), now: now,
            logger: logger)
        let server = PushServer(
            configuration: PushServer.settings(
                port: 0, readTimeout: readTimeout, maximumBodyBytes: maximumBodyBytes, maximumConnections: maximumConnections,
                allowFrom: allowFrom, tls: tls, http2: http2),
            endpoint: endpoint, operations: TestOperations(registry: registry),
            listenerMetrics: ListenerMetrics(listener: "push", factory: PrometheusMetricsFactory(registry: registry)), logger: logger)
        return try await withGracefulServing(server) {
            let port = await server.port
            return try await CurlLoop.withLoop(logger: quietLogger) { loop in
                try await body(PushServerHarness(
                    store: store, endpoint: endpoint, server: server, loop: loop, registry: registry, logs: logs,
                    port: port, directory: directory))
            }
        }
    }

    /// POSTs `body` to `/api/push` with extra headers.
    public func push(_ body: [UInt8], headers: [String: String] = [:]) async throws -> HTTPResponse {
        var fields = HTTPHeaders()
        fields.add(name: "Content-Type", value: "application/json")
        for (name, value) in headers.sorted(by: { $0.key < $1.key }) { fields.add(name: name, value: value) }
        return try await loop.perform(HTTPRequest(url: url, method: "POST", headers: fields, body: body))
    }

    public func push(_ text: String, headers: [String: String] = [:]) async throws -> HTTPResponse {
        try await push(Array(text.utf8), headers: headers)
    }

    public func get(_ path: String) async throws -> HTTPResponse {
        try await loop.perform(HTTPRequest(url: "http://127.0.0.1:\(port)\(path)"))
    }

    /// The journal's jobs, in order.
    public func jobs() throws -> [JobRecord] { try store.headJobs(limit: 1_000_000) }
}

extension HTTPResponse {
    public var text: String { String(decoding: body, as: UTF8.self) }
}

/// A plain TCP client for what curl will not send: bodies that stall, heads that never end, chunked
/// bodies without end. Every read has a timeout, so a test never hangs.
public final class RawConnection: Sendable {
    private let descriptor: Int32

    /// Connects to 127.0.0.1:`port`; `receiveBuffer` shrinks the socket's receive buffer (a client
    /// that reads nothing then stops the sender sooner). The read timeout only keeps a broken test
    /// from hanging: tests wait for the server's answer or close, which on a loaded machine running
    /// the whole suite in parallel can take seconds.
    public init(port: Int, readTimeoutSeconds: Int = 30, receiveBuffer: Int32? = nil) throws {
        descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        if var size = receiveBuffer {
            setsockopt(descriptor, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        }
        var timeout = timeval(tv_sec: readTimeoutSeconds, tv_usec: 0)
        setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard connected == 0 else { throw POSIXError(.ECONNREFUSED) }
    }

    deinit { close(descriptor) }

    /// Sends bytes; false when the peer has closed (EPIPE / ECONNRESET).
    @discardableResult
    public func send(_ text: String) -> Bool {
        let bytes = Array(text.utf8)
        return bytes.withUnsafeBytes { Glibc.send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) } == bytes.count
    }

    @discardableResult
    public func send(bytes: [UInt8]) -> Bool {
        bytes.withUnsafeBytes { Glibc.send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) } == bytes.count
    }

    /// Everything the server sends until it closes the connection (or the read timeout passes:
    /// then `closed` is false). The blocking reads run on a thread of their own, never on the
    /// cooperative pool the server under test needs.
    public func readUntilClosed() async -> (text: String, closed: Bool) {
        let descriptor = self.descriptor
        return await withCheckedContinuation { continuation in
            Thread.detachNewThread { continuation.resume(returning: Self.read(descriptor)) }
        }
    }

    /// Reads until what was received contains `marker` (or a close or the read timeout), on a thread
    /// of its own; returns everything received.
    public func read(through marker: String) async -> String {
        let needle = Array(marker.utf8)
        // Only the bytes that just arrived (and the marker's length before them) are searched: a
        // feed test reads megabytes through a 4 KiB receive buffer.
        let received = await readBytes { received, arrived in
            received[max(0, received.count - arrived - needle.count)...].firstRange(of: needle) != nil
        }
        return String(decoding: received, as: UTF8.self)
    }

    /// Reads until `done` says what was received is enough (or a close or the read timeout), on a
    /// thread of its own; returns the bytes received (binary protocols: HTTP/2 frames). `done` gets
    /// everything received and how many of those bytes just arrived.
    public func readBytes(until done: @escaping @Sendable ([UInt8], Int) -> Bool) async -> [UInt8] {
        let descriptor = self.descriptor
        return await withCheckedContinuation { continuation in
            Thread.detachNewThread {
                var received: [UInt8] = []
                var buffer = [UInt8](repeating: 0, count: 65_536)
                while true {
                    let count = buffer.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
                    if count <= 0 { break }
                    received += buffer.prefix(count)
                    if done(received, count) { break }
                }
                continuation.resume(returning: received)
            }
        }
    }

    /// Reads until the end of a response head (or a close or the read timeout), on a thread of its own.
    public func readResponseHead() async -> String {
        await read(through: "\r\n\r\n")
    }

    private static func read(_ descriptor: Int32) -> (text: String, closed: Bool) {
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            let count = buffer.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
            if count > 0 {
                received += buffer.prefix(count)
            } else {
                return (String(decoding: received, as: UTF8.self), count == 0 || errno == ECONNRESET)
            }
        }
    }
}
