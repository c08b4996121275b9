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
