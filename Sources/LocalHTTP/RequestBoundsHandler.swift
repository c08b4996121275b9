import HTTPTypes
public import NIOCore
public import NIOHTTPTypes

/// The body of a request did not arrive within the read timeout.
public struct RequestBodyTimeout: Error {}

/// Bounds the reading of every request on a connection (DESIGN §4: "never a hung request"):
/// - a request head must arrive within `readTimeout` of the connection opening or of the previous
///   answer, else the connection is closed (slow-loris headers, idle keep-alive connections);
/// - a body must arrive within `readTimeout` of its head, else its reader gets an error and the
///   endpoint answers 408;
/// - a body over `maximumBodyBytes` (declared, or counted as it arrives) is not passed on past the
///   first byte over the limit, and the connection is closed once the answer is written, so an
///   oversize body is never read to its end.
/// Any answer marked `Connection: close` also closes the connection once written. With an
/// ``ConnectionAdmission`` it tells the listener each connection's phase (awaiting its first head,
/// busy with a request, idle between requests), so a full listener knows which it may close, and
/// reports the connections it closes for a missing head (`head_timeout`, `idle_timeout`).
/// The head deadline runs from the connection opening (or the previous answer), so bytes trickled
/// one by one do not extend it. It runs on the channel's event loop only, like every NIO handler.
public final class RequestBoundsHandler: ChannelDuplexHandler, RemovableChannelHandler {
    public typealias InboundIn = HTTPRequestPart
    public typealias InboundOut = HTTPRequestPart
    public typealias OutboundIn = HTTPResponsePart
    public typealias OutboundOut = HTTPResponsePart

    private let maximumBodyBytes: Int
    private let readTimeout: TimeAmount
    private var headTimer: Scheduled<Void>?
    private var bodyTimer: Scheduled<Void>?
    private var bodyBytes = 0
    private var discarding = false
    private var closeAfterAnswer = false
    private var readingBody = false
    private var unanswered = 0
    private var requests = 0
    private let admission: ConnectionAdmission?

    /// Creates the handler of one connection.
    public init(maximumBodyBytes: Int, readTimeout: TimeAmount, admission: ConnectionAdmission? = nil) {
        self.maximumBodyBytes = maximumBodyBytes
        self.readTimeout = readTimeout
        self.admission = admission
    }

    public func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { armHeadTimer(context) }
    }

    public func channelActive(context: ChannelHandlerContext) {
        armHeadTimer(context)
        context.fireChannelActive()
    }

    public func handlerRemoved(context: ChannelHandlerContext) {
        cancelTimers()
    }

    public func channelInactive(context: ChannelHandlerContext) {
        cancelTimers()
        context.fireChannelInactive()
    }

    public func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            headTimer?.cancel()
            headTimer = nil
            if unanswered == 0 { admission?.enter(.busy, context.channel) }
            unanswered += 1
            requests &+= 1
            bodyBytes = 0
            readingBody = true
            discarding = false
            if DeclaredLength(head.headerFields, maximum: maximumBodyBytes) != .acceptable {
                discarding = true
                closeAfterAnswer = true
            }
            let loop = context.eventLoop.assumeIsolated()
            bodyTimer = loop.scheduleTask(in: readTimeout) { [self] in
                guard readingBody else { return }
                discarding = true
                closeAfterAnswer = true
                context.fireErrorCaught(RequestBodyTimeout())
            }
            context.fireChannelRead(data)
        case .body(let buffer):
            if discarding { return }
            bodyBytes += buffer.readableBytes
            if bodyBytes > maximumBodyBytes {
                // Pass on the part that crosses the limit, so the reader sees it, and nothing after.
                discarding = true
                closeAfterAnswer = true
            }
            context.fireChannelRead(data)
        case .end:
            readingBody = false
            bodyTimer?.cancel()
            bodyTimer = nil
            context.fireChannelRead(data)
        }
    }

    public func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        switch unwrapOutboundIn(data) {
        case .head(let head):
            if head.headerFields[.connection]?.lowercased() == "close" { closeAfterAnswer = true }
            context.write(data, promise: promise)
        case .body:
            context.write(data, promise: promise)
        case .end:
            unanswered = max(0, unanswered - 1)
            guard closeAfterAnswer else {
                if unanswered == 0, !readingBody {
                    admission?.enter(.idle, context.channel)
                    armHeadTimer(context)
                }
                context.write(data, promise: promise)
                return
            }
            let written = context.eventLoop.makePromise(of: Void.self)
            if let promise { written.futureResult.cascade(to: promise) }
            let channel = context.channel
            written.futureResult.whenComplete { _ in channel.close(promise: nil) }
            context.writeAndFlush(data, promise: written)
        }
    }

    private func armHeadTimer(_ context: ChannelHandlerContext) {
        headTimer?.cancel()
        let channel = context.channel
        headTimer = context.eventLoop.assumeIsolated().scheduleTask(in: readTimeout) { [self] in
            admission?.report(requests == 0 ? .headTimeout : .idleTimeout)
            channel.close(promise: nil)
        }
    }

    private func cancelTimers() {
        headTimer?.cancel()
        bodyTimer?.cancel()
        headTimer = nil
        bodyTimer = nil
    }
}
