import Hummingbird
import NIOCore

/// The orders API's request context: Hummingbird's basic one, plus the request's connection, so a
/// live feed can run its writes on the connection's event loop (see ``EventLoopTaskExecutor``) and
/// end as soon as the connection closes.
public struct APIRequestContext: RequestContext {
    /// Hummingbird's per-request storage (logger, route parameters).
    public var coreContext: CoreRequestContextStorage
    /// The connection.
    let channel: any Channel

    /// Creates the context of a request that arrived on `source.channel`.
    public init(source: ApplicationRequestContextSource) {
        coreContext = CoreRequestContextStorage(source: source)
        channel = source.channel
    }
}

/// A task executor that runs jobs on one NIO event loop.
///
/// A live feed connection spends its life waking for a change and writing it. On the default
/// executor each change costs it two thread hops: the hub's wake-up lands on the cooperative pool,
/// and the write it then makes is handed over to the connection's event loop. Preferring this
/// executor for the live loop runs both on the event loop, where NIO writes inline; the hub wakes a
/// loop's subscribers with one job per loop (``ChangeHub``). At 10,000 subscribers that was the
/// difference between missing and meeting DESIGN §9's feed latency (docs/PERFORMANCE.md).
///
/// Only work that never blocks may run here: the live loop takes a lock, writes and records
/// metrics. Snapshots and backlogs, which read the store, run before it, on the default executor.
final class EventLoopTaskExecutor: TaskExecutor {
    let eventLoop: any EventLoop

    init(_ eventLoop: any EventLoop) {
        self.eventLoop = eventLoop
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        eventLoop.execute { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
    }
}

/// Ends a feed as soon as its client closes its side of the connection.
///
/// The API listener allows half-closed connections (as HTTP/1.1 does), so a feed client that goes
/// away with a FIN leaves the channel open, and its subscriber would keep its slot until a write to
/// it fails: at the next change or heartbeat, up to `api.heartbeat_s` later. No SSE client sends a
/// request and then half-closes to wait for its events, so for a feed the end of input is the end.
/// Added at the front of the connection's pipeline for the feed's life; runs on its event loop.
final class FeedHangUpHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer

    /// The handler's name in the pipeline.
    static let name = "orderlive.feed-hang-up"

    private let subscriber: FeedSubscriber

    init(_ subscriber: FeedSubscriber) {
        self.subscriber = subscriber
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let event = event as? ChannelEvent, event == .inputClosed { subscriber.end(.closed) }
        context.fireUserInboundEventTriggered(event)
    }

    /// Watches `channel` for `subscriber` until ``unwatch(_:)``.
    static func watch(_ channel: any Channel, for subscriber: FeedSubscriber) {
        channel.eventLoop.execute {
            // Fails only when the channel is already gone; then its close future ends the feed.
            try? channel.pipeline.syncOperations.addHandler(FeedHangUpHandler(subscriber), name: name, position: .first)
        }
        channel.closeFuture.whenComplete { _ in subscriber.end(.closed) }
    }

    /// Stops watching: the feed ended and the connection may serve another request.
    static func unwatch(_ channel: any Channel) {
        channel.pipeline.removeHandler(name: name, promise: nil)
    }
}
