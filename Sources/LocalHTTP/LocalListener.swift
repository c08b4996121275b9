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
    /// TLS, when set: every connection must complete a handshake with this material.
    public var tls: ListenerTLS?

    /// Creates settings.
    public init(name: String, key: String, host: String, port: Int, readTimeout: Duration, maximumBodyBytes: Int,
                maximumConnections: Int, allowFrom: [AddressRange] = [], tls: ListenerTLS? = nil) {
        self.name = name
        self.key = key
        self.host = host
        self.port = port
        self.readTimeout = readTimeout
        self.maximumBodyBytes = maximumBodyBytes
        self.maximumConnections = maximumConnections
        self.allowFrom = allowFrom
        self.tls = tls
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

/// The one listener builder under both front doors: Hummingbird's HTTP/1 server with, per
/// connection, ``AdmissionHandler`` first (allow list and eviction), then TLS when configured, the
/// HTTP codecs with ``HTTPVersionHandler``, ``RequestBoundsHandler`` and the listener's own handlers.
public enum LocalListener {
    /// Serves `router` on `settings` until the application returns (graceful shutdown, which the
    /// caller arranges). `onRunning` hears the bound port. A bind that fails throws ``ListenFailure``.
    public static func run(
        _ settings: ListenerSettings, router: Router<BasicRequestContext>, admission: ConnectionAdmission,
        handlers: @escaping @Sendable () -> [any RemovableChannelHandler] = { [] },
        onRunning: @escaping @Sendable (Int) -> Void, logger: Logger
    ) async throws {
        let bounds = (settings.maximumBodyBytes, TimeAmount.nanoseconds(Checked.nanoseconds(of: settings.readTimeout)))
        let tls = settings.tls
        let app = Application(
            router: router,
            server: HTTP1Listener.builder(
                limits: Listener.headerLimits,
                front: {
                    var front: [any ChannelHandler] = [AdmissionHandler(admission: admission)]
                    if let tls {
                        front.append(tls.handler())
                        front.append(TLSFailureHandler(admission: admission))
                    }
                    return front
                },
                handlers: {
                    [RequestBoundsHandler(maximumBodyBytes: bounds.0, readTimeout: bounds.1, admission: admission)] + handlers()
                }),
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
