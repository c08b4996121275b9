#if canImport(Glibc)
import Glibc
#endif
import CheckedInput
public import Hummingbird
import HummingbirdCore
public import Logging
import NIOCore
import NIOSSL
import NIOTLS
import CoreMetrics

/// What one listener is: where it binds, how it bounds its connections, whether it speaks TLS.
/// Both the push listener and the orders API are built from one of these by ``LocalListener``.
public struct ListenerSettings: Sendable {
    /// The `listener` label of its metrics and the name in its logs (`push`, `api`).
    public var name: String
    /// The configuration key of its address (`ingest.listen`, `api.listen`), named in errors.
    public var key: String
    /// The address to bind.
    public var host: String
    /// The port; 0 picks a free one.
    public var port: Int
    /// A request head must arrive within this time of the connection opening (trickled bytes do not
    /// extend it) or of the previous answer (keep-alive idle), and then its body within it.
    public var readTimeout: Duration
    /// The largest request body read.
    public var maximumBodyBytes: Int
    /// The most connections held at once (``ConnectionAdmission``).
    public var maximumConnections: Int
    /// The peers allowed to connect; empty allows everyone.
    public var allowFrom: [AddressRange]
    /// TLS, when set: every connection must complete a handshake with this material, and offers
    /// `h2` and `http/1.1` by ALPN.
    public var tls: ListenerTLS?
    /// HTTP/2 beside HTTP/1.x: `h2c` without TLS, streams per connection.
    public var http2: ListenerHTTP2

    /// Creates settings.
    public init(name: String, key: String, host: String, port: Int, readTimeout: Duration, maximumBodyBytes: Int,
                maximumConnections: Int, allowFrom: [AddressRange] = [], tls: ListenerTLS? = nil,
                http2: ListenerHTTP2 = ListenerHTTP2()) {
        self.name = name
        self.key = key
        self.host = host
        self.port = port
        self.readTimeout = readTimeout
        self.maximumBodyBytes = maximumBodyBytes
        self.maximumConnections = maximumConnections
        self.allowFrom = allowFrom
        self.tls = tls
        self.http2 = http2
    }
}

/// How a listener serves HTTP/2 (DESIGN §14): always `h2` by ALPN on TLS; without TLS, `h2c` by
/// prior knowledge when `cleartext` (`*.http2_cleartext`). HTTP/1.x is served on the same port
/// either way.
public struct ListenerHTTP2: Sendable, Hashable {
    /// Whether a cleartext connection that opens with HTTP/2's preface is served as `h2c`.
    public var cleartext: Bool
    /// The most streams open at once on one HTTP/2 connection (`SETTINGS_MAX_CONCURRENT_STREAMS`,
    /// `*.max_streams_per_connection`); more are refused with `REFUSED_STREAM`.
    public var maximumStreamsPerConnection: Int

    /// `h2c` off, 100 streams per connection.
    public init(cleartext: Bool = false, maximumStreamsPerConnection: Int = 100) {
        self.cleartext = cleartext
        self.maximumStreamsPerConnection = maximumStreamsPerConnection
    }
}

/// A listener's address could not be bound: the same words as the start-up check, naming the key.
public struct ListenFailure: Error, Sendable, CustomStringConvertible {
    /// The configuration key (`ingest.listen`, `api.listen`).
    public let key: String
    /// The address.
    public let host: String
    /// The port.
    public let port: Int
    /// Why (`the port is in use`, ...).
    public let problem: String

    /// A failure of `key`'s address.
    public init(key: String, host: String, port: Int, problem: String) {
        self.key = key
        self.host = host
        self.port = port
        self.problem = problem
    }

    public var description: String {
        "cannot listen on \(host):\(port) ('\(key)'): \(problem); stop what holds it or choose another address"
    }

    /// The failure behind a bind error, or nil for any other error.
    static func from(_ error: any Error, key: String, host: String, port: Int) -> ListenFailure? {
        guard let error = error as? IOError else { return nil }
        let problem: String
        switch error.errnoCode {
        case EADDRINUSE: problem = "the port is in use"
        case EADDRNOTAVAIL: problem = "the address is not this machine's"
        case EACCES: problem = "permission denied (a port below 1024 needs privileges)"
        default: return nil
        }
        return ListenFailure(key: key, host: host, port: port, problem: problem)
    }
}

/// The one listener builder under both front doors: Hummingbird's server with, per connection,
/// ``AdmissionHandler`` first (allow list and eviction), then TLS when configured, the choice of
/// HTTP/1.x or HTTP/2 (``HTTPListener``), and per HTTP/1 connection or HTTP/2 stream the HTTP codecs,
/// ``RequestBoundsHandler`` and the listener's own handlers.
public enum LocalListener {
    /// Serves `router` on `settings` until the application returns (graceful shutdown, which the
    /// caller arranges). `onRunning` hears the bound port. A bind that fails throws ``ListenFailure``.
    public static func run(
        _ settings: ListenerSettings, router: Router<BasicRequestContext>, admission: ConnectionAdmission,
        metrics: ListenerMetrics? = nil, handlers: @escaping @Sendable () -> [any RemovableChannelHandler] = { [] },
        onRunning: @escaping @Sendable (Int) -> Void, logger: Logger
    ) async throws {
        let tls = settings.tls
        let setup = HTTPListener.Setup(
            limits: Listener.headerLimits,
            front: {
                var front: [any ChannelHandler] = [AdmissionHandler(admission: admission)]
                if let tls {
                    front.append(tls.handler())
                    front.append(TLSFailureHandler(admission: admission))
                }
                return front
            },
            handlers: handlers,
            maximumBodyBytes: settings.maximumBodyBytes,
            readTimeout: .nanoseconds(Checked.nanoseconds(of: settings.readTimeout)),
            admission: admission,
            choice: tls != nil ? .alpn : settings.http2.cleartext ? .sniff : .http1,
            maximumStreams: settings.http2.maximumStreamsPerConnection,
            streamsOpened: metrics?.http2Streams)
        let app = Application(
            router: router,
            server: HTTPListener.builder(setup),
            configuration: .init(address: .hostname(settings.host, port: settings.port), serverName: "orderlive",
                                 // A burst of connects up to the limit queues instead of waiting for SYN retries.
                                 backlog: min(max(256, settings.maximumConnections), 4_096)),
            onServerRunning: { channel in onRunning(channel.localAddress?.port ?? settings.port) },
            logger: logger)
        do {
            try await app.run()
        } catch {
            throw ListenFailure.from(error, key: settings.key, host: settings.host, port: settings.port) ?? error
        }
    }
}

extension LocalListener {
    /// Loads `tls`' files again (SIGHUP): on success new handshakes use them and the expiry gauge
    /// moves; on failure the material in use stays, the error is logged naming the key and the
    /// path, and `orderlive_tls_reload_failures_total` counts it. Returns whether it loaded.
    public static func reload(_ tls: ListenerTLS, listener: String, metrics: ListenerMetrics, logger: Logger) -> Bool {
        switch tls.reload() {
        case .success(let expiry):
            metrics.certificateExpiry.record(expiry)
            logger.notice("TLS certificate and key reloaded; new connections use them", metadata: [
                "tls.listener": "\(listener)", "tls.certificate_expires_at": "\(Int64(expiry))",
            ])
            return true
        case .failure(let error):
            metrics.tlsReloadFailures.increment()
            logger.error("the TLS files did not load; the listener keeps the certificate it has", metadata: [
                "tls.listener": "\(listener)", "tls.key": "\(error.key)", "tls.path": "\(error.path)",
                "tls.reason": "\(error.problem)",
            ])
            return false
        }
    }
}

/// Right behind the TLS handler: a handshake that fails (plain HTTP on a TLS port, TLS 1.1, no or
/// an untrusted client certificate) closes the connection quietly and is counted, instead of
/// reaching the HTTP handlers as an error. It runs on the channel's event loop only.
final class TLSFailureHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = NIOAny

    private let admission: ConnectionAdmission
    private var handshaken = false
    private var reported = false

    init(admission: ConnectionAdmission) {
        self.admission = admission
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let event = event as? TLSUserEvent, case .handshakeCompleted = event { handshaken = true }
        context.fireUserInboundEventTriggered(event)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        guard error is NIOSSLError || error is BoringSSLError else {
            context.fireErrorCaught(error)
            return
        }
        // After the handshake a TLS error is the peer leaving without close_notify: not counted.
        if !handshaken, !reported {
            reported = true
            admission.report(.tlsHandshake)
        }
        context.close(promise: nil)
    }
}
