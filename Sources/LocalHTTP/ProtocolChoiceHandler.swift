public import NIOCore
import NIOTLS

/// Chooses a connection's protocol, within the read timeout of its opening, for the ALPN handler
/// behind it (`NIOTypedApplicationProtocolNegotiationHandler`), which then sets the pipeline up:
/// - `.alpn`: the TLS handshake chooses (`h2` or `http/1.1`); this handler only bounds how long the
///   handshake may take, closing the connection as a `head_timeout` when it does not complete;
/// - `.sniff`: cleartext with `h2c` allowed: a connection whose first 24 bytes are HTTP/2's client
///   preface (RFC 9113 §3.4) is HTTP/2, any other is HTTP/1.x, decided at the first byte that
///   differs. The bytes read are passed on untouched once the pipeline is set up.
/// It runs on the channel's event loop only, like every NIO handler, and leaves once it has chosen.
public final class ProtocolChoiceHandler: ChannelInboundHandler, RemovableChannelHandler {
    public typealias InboundIn = ByteBuffer
    public typealias InboundOut = ByteBuffer

    /// How the protocol is chosen.
    public enum Mode: Sendable, Equatable {
        /// HTTP/1.x only: no choice (cleartext, `h2c` not allowed).
        case http1
        /// By the TLS handshake's ALPN.
        case alpn
        /// By the first bytes: HTTP/2's preface or not.
        case sniff
    }

    /// HTTP/2's client connection preface.
    static let preface = Array("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8)

    private let mode: Mode
    private let deadline: TimeAmount
    private let admission: ConnectionAdmission?
    private var timer: Scheduled<Void>?
    private var read: ByteBuffer?
    private var chosen = false

    /// Creates the handler of one connection.
    public init(_ mode: Mode, deadline: TimeAmount, admission: ConnectionAdmission?) {
        self.mode = mode
        self.deadline = deadline
        self.admission = admission
    }

    public func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { arm(context) }
    }

    public func channelActive(context: ChannelHandlerContext) {
        arm(context)
        context.fireChannelActive()
    }

    public func handlerRemoved(context: ChannelHandlerContext) {
        timer?.cancel()
        timer = nil
    }

    public func channelInactive(context: ChannelHandlerContext) {
        timer?.cancel()
        timer = nil
        context.fireChannelInactive()
    }

    public func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if mode == .alpn, let event = event as? TLSUserEvent, case .handshakeCompleted = event {
            context.fireUserInboundEventTriggered(event)
            choose(context)
            return
        }
        context.fireUserInboundEventTriggered(event)
    }

    public func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard mode == .sniff, !chosen else { return context.fireChannelRead(data) }
        var bytes = unwrapInboundIn(data)
        if var earlier = read {
            earlier.writeBuffer(&bytes)
            bytes = earlier
        }
        read = bytes
        let view = bytes.readableBytesView
        let compared = min(view.count, Self.preface.count)
        let matches = view.prefix(compared).elementsEqual(Self.preface.prefix(compared))
        guard !matches || compared == Self.preface.count else { return }
        context.fireUserInboundEventTriggered(TLSUserEvent.handshakeCompleted(negotiatedProtocol: matches ? "h2" : nil))
        choose(context)
    }

    /// The protocol is chosen: hands what was read on and leaves.
    private func choose(_ context: ChannelHandlerContext) {
        chosen = true
        timer?.cancel()
        timer = nil
        if let read {
            self.read = nil
            context.fireChannelRead(wrapInboundOut(read))
            context.fireChannelReadComplete()
        }
        context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
    }

    private func arm(_ context: ChannelHandlerContext) {
        guard timer == nil, !chosen else { return }
        let channel = context.channel
        timer = context.eventLoop.assumeIsolated().scheduleTask(in: deadline) { [self] in
            timer = nil
            guard !chosen else { return }
            admission?.report(.headTimeout)
            channel.close(promise: nil)
        }
    }
}
