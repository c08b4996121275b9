import NIOCore
import NIOHTTP2

/// First on an HTTP/2 stream (beneath the frame codec): a stream closed after its answer is complete
/// while the client is still sending its request — ``RequestBoundsHandler`` does that once a body over
/// the limit was answered 413 — is left open for the rest of the body (discarded, and bounded by
/// HTTP/2 flow control) up to `grace`, and only then reset. Resetting at once races the answer: a
/// client may see the reset before the answer it was sent and report a failed request (curl does,
/// with `RST_STREAM(NO_ERROR)` as with `CANCEL`). A close before the answer is complete, or of a
/// stream whose request has ended, is a close. On the stream's event loop only.
final class HTTP2StreamCloser: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTP2Frame.FramePayload
    typealias OutboundIn = HTTP2Frame.FramePayload
    typealias OutboundOut = HTTP2Frame.FramePayload

    private let grace: TimeAmount
    private var answered = false
    private var requestEnded = false
    private var pending: Scheduled<Void>?

    init(grace: TimeAmount) {
        self.grace = grace
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .headers(let headers) where headers.endStream: requestEnded = true
        case .data(let data) where data.endStream: requestEnded = true
        default: break
        }
        context.fireChannelRead(data)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        switch unwrapOutboundIn(data) {
        case .headers(let headers) where headers.endStream: answered = true
        case .data(let data) where data.endStream: answered = true
        default: break
        }
        context.write(data, promise: promise)
    }

    func close(context: ChannelHandlerContext, mode: CloseMode, promise: EventLoopPromise<Void>?) {
        guard answered, !requestEnded, mode == .all else { return context.close(mode: mode, promise: promise) }
        promise?.succeed()
        guard pending == nil else { return }
        pending = context.eventLoop.assumeIsolated().scheduleTask(in: grace) { context.close(promise: nil) }
    }

    func channelInactive(context: ChannelHandlerContext) {
        pending?.cancel()
        pending = nil
        context.fireChannelInactive()
    }
}
