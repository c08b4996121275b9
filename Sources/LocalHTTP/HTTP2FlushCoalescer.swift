public import NIOCore

/// Beneath swift-nio-http2's handler (above TLS): the flushes of one event-loop turn become one.
///
/// swift-nio-http2 turns each stream's flush into a flush of the connection. When the change feed
/// writes one change to a connection's 100 streams in one job, that was 100 socket writes (and 100
/// TLS records) of one small DATA frame each; now the frames queue and go out in one write when the
/// job is done, as Netty's `FlushConsolidationHandler` does. A close flushes first, so nothing
/// written before it is lost. On the connection's event loop only.
public final class HTTP2FlushCoalescer: ChannelOutboundHandler, RemovableChannelHandler {
    public typealias OutboundIn = IOData
    public typealias OutboundOut = IOData

    /// The connection's write buffer limits: 16 KiB per stream it may carry, between NIO's 64 KiB
    /// (one HTTP/1 connection's) and 4 MiB, so one turn's frames for all its streams fit before the
    /// connection turns unwritable (each time it does, every stream is told, twice).
    public static func waterMark(maximumStreams: Int) -> ChannelOptions.Types.WriteBufferWaterMark {
        let high = max(64 << 10, min(max(maximumStreams, 1), 256) * (16 << 10))
        return .init(low: high / 2, high: high)
    }

    /// Whether a flush is owed and a job to make it is queued.
    private var flushPending = false

    public init() {}

    /// Written bytes count against the socket's write buffer limit whether flushed or not: once they
    /// reach it (the channel turns unwritable), what is owed goes out now. Holding it to the end of
    /// the turn while unwritable left streams waiting on a writability change for seconds in the
    /// feed benchmark.
    public func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        context.write(data, promise: promise)
        if flushPending, !context.channel.isWritable { flushNow(context: context) }
    }

    public func flush(context: ChannelHandlerContext) {
        guard context.channel.isWritable else {
            flushPending = false
            return context.flush()
        }
        guard !flushPending else { return }
        flushPending = true
        context.eventLoop.assumeIsolated().execute { [self] in flushNow(context: context) }
    }

    public func close(context: ChannelHandlerContext, mode: CloseMode, promise: EventLoopPromise<Void>?) {
        flushNow(context: context)
        context.close(mode: mode, promise: promise)
    }

    public func handlerRemoved(context: ChannelHandlerContext) {
        flushNow(context: context)
    }

    private func flushNow(context: ChannelHandlerContext) {
        guard flushPending else { return }
        flushPending = false
        context.flush()
    }
}
