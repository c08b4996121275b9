import CheckedInput
import NIOCore

/// The live half of a feed connection: once the snapshot or backlog is written, the connection's
/// event loop writes the hub's changes into it directly.
///
/// Each change is a chunk the hub framed once (``FeedBytes``); a live connection writes that same
/// buffer at the front of its pipeline, beneath Hummingbird's encoder, and flushes. Before, each
/// connection was an async task that the hub resumed and that wrote through Hummingbird's async body
/// writer and its HTTP encoder: two thread hops, a task switch and three buffers per delivery. At
/// 10,000 subscribers that cost was the feed's latency (docs/PERFORMANCE.md). The head, the snapshot
/// and the last event go through the HTTP encoder from ``FeedRequestHandler``, ordered with these
/// writes because both run on the loop in the order they were made.
///
/// It also ends the feed as soon as the client goes: the listener allows half-closed connections (as
/// HTTP/1.1 does), so a client that leaves with a FIN would otherwise keep its slot until a write to
/// it failed, up to `api.heartbeat_s` later. No SSE client sends a request and then half-closes to
/// wait for its events, so for a feed the end of input is the end.
final class FeedConnection: Sendable {
    let eventLoop: any EventLoop
    private let channel: any Channel
    private let hub: ChangeHub
    /// The handler in the pipeline, while attached; touched on the event loop only.
    private let handler: NIOLoopBoundBox<FeedConnectionHandler?>

    init(channel: any Channel, hub: ChangeHub) {
        self.channel = channel
        self.hub = hub
        eventLoop = channel.eventLoop
        handler = .makeEmptyBox(valueType: FeedConnectionHandler.self, eventLoop: channel.eventLoop)
    }

    /// Puts the handler at the front of the pipeline, for `subscriber`, until ``detach()``.
    func attach(_ subscriber: FeedSubscriber) {
        let handler = self.handler
        let channel = self.channel
        eventLoop.execute {
            let added = FeedConnectionHandler(subscriber)
            do {
                try channel.pipeline.syncOperations.addHandler(added, name: FeedConnectionHandler.name, position: .first)
                handler.value = added
            } catch {
                // The channel is already gone: the feed ends (its close future fires too).
                subscriber.end(.closed)
            }
        }
        // However the connection ends, the subscriber leaves the hub: also when it closes before the
        // feed's end was written, which would otherwise do it (FeedRequestHandler).
        let hub = self.hub
        channel.closeFuture.whenComplete { _ in
            subscriber.end(.closed)
            hub.unsubscribe(subscriber)
            self.detach()
        }
    }

    /// Takes the handler out: the feed ended and the connection may serve another request.
    func detach() {
        let handler = self.handler
        let channel = self.channel
        eventLoop.execute {
            guard let attached = handler.value else { return }
            handler.value = nil
            channel.pipeline.syncOperations.removeHandler(attached, promise: nil)
        }
    }

    /// Writes what `subscriber` has for it, in a job on the event loop.
    func wake(_ subscriber: FeedSubscriber) {
        eventLoop.execute { self.write(subscriber) }
    }

    /// Writes what `subscriber` has for it. On the event loop only (``ChangeHub`` calls it there for
    /// each of a loop's connections in one job).
    ///
    /// While the socket is not writable nothing is taken: the changes wait in the subscriber's bounded
    /// queue, and it is cut off when that is full; writability coming back writes them. The end is
    /// always written, after what was queued before it (except after an overflow, which dropped it).
    func write(_ subscriber: FeedSubscriber) {
        let context = handler.value?.context
        let channel = context?.channel
        var delivered = 0
        var oldest: Double?
        defer {
            if delivered > 0 {
                hub.metrics.delivered.increment(by: delivered)
                if let oldest { hub.metrics.lag.recordNanoseconds(Checked.int64(clamping: hub.lag(since: oldest) * 1e9)) }
            }
        }
        while true {
            if let channel, !channel.isWritable, !subscriber.hasEnded { return }
            switch subscriber.take() {
            case .items(let items):
                guard let context else { continue }
                for item in items { context.write(NIOAny(item.bytes.chunk), promise: nil) }
                context.flush()
                delivered += items.count
                if oldest == nil { oldest = items.first?.at }
            case .heartbeat:
                guard let context else { continue }
                context.writeAndFlush(NIOAny(FeedBytes.heartbeat.chunk), promise: nil)
            case .nothing:
                return
            case .end(let ending):
                subscriber.reportFinished(ending)
                return
            }
        }
    }
}

/// ``FeedConnection``'s handler at the front of a feed connection's pipeline: its context writes
/// beneath the HTTP encoder; it ends the feed when the client closes its side, and writes what waited
/// when the socket becomes writable again.
final class FeedConnectionHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer

    /// The handler's name in the pipeline.
    static let name = "orderlive.feed"

    private let subscriber: FeedSubscriber
    private(set) var context: ChannelHandlerContext?

    init(_ subscriber: FeedSubscriber) {
        self.subscriber = subscriber
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.context = nil
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let event = event as? ChannelEvent, event == .inputClosed { subscriber.end(.closed) }
        context.fireUserInboundEventTriggered(event)
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable { subscriber.connection.write(subscriber) }
        context.fireChannelWritabilityChanged()
    }
}
