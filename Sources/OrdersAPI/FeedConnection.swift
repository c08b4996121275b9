import CheckedInput
import LocalHTTP
import NIOCore
import CoreMetrics

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

    /// Puts the handler beneath the HTTP encoder (after TLS), or first on an HTTP/2 stream, for
    /// `subscriber`, until ``detach()``. `framing` is how its events go out (``RawBodyFraming``):
    /// chunks on HTTP/1.1, as they are on HTTP/1.0 (the body ending with the connection), DATA frames
    /// on an HTTP/2 stream.
    func attach(_ subscriber: FeedSubscriber, framing: RawBodyFraming) {
        let handler = self.handler
        let channel = self.channel
        let heartbeat = TimeAmount.nanoseconds(Checked.nanoseconds(of: hub.configuration.heartbeat))
        eventLoop.execute {
            let added = FeedConnectionHandler(subscriber, framing: framing, heartbeat: heartbeat)
            do {
                let pipeline = channel.pipeline.syncOperations
                try pipeline.addHandler(added, name: FeedConnectionHandler.name, position: RawBodyFraming.of(pipeline).position)
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
        let attached = handler.value
        let channel = attached?.context?.channel
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
                guard let attached else { continue }
                attached.send(items.lazy.map(\.bytes))
                delivered += items.count
                if oldest == nil { oldest = items.first?.at }
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
/// beneath the HTTP encoder; it ends the feed when the client closes its side, writes what waited
/// when the socket becomes writable again, and beats the heartbeat.
///
/// The heartbeat is this connection's own: a comment goes out whenever nothing at all was written to
/// the connection for `heartbeat` (every write passes this handler, the head and snapshot included),
/// so an idle stream gets one exactly every `heartbeat`, and a busy one none. One timer per
/// connection, on its event loop: it fires at the last write plus `heartbeat` and moves itself there
/// when something was written since, so a write costs only a clock reading.
final class FeedConnectionHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundIn = IOData

    /// The handler's name in the pipeline.
    static let name = "orderlive.feed"

    private let subscriber: FeedSubscriber
    /// How events are written: chunks, as they are (HTTP/1.0), or HTTP/2 DATA frames.
    let framing: RawBodyFraming
    private let heartbeat: TimeAmount
    private(set) var context: ChannelHandlerContext?
    /// When anything was last written; the event loop's clock (an embedded loop's in tests).
    private var lastWrite = NIODeadline.uptimeNanoseconds(0)
    private var beat: Scheduled<Void>?

    init(_ subscriber: FeedSubscriber, framing: RawBodyFraming, heartbeat: TimeAmount) {
        self.subscriber = subscriber
        self.framing = framing
        self.heartbeat = heartbeat
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        lastWrite = context.eventLoop.now
        schedule(context: context)
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.context = nil
        beat?.cancel()
        beat = nil
    }

    /// Writes these events and flushes.
    func send(_ events: some Sequence<FeedBytes>) {
        guard let context else { return }
        for event in events { context.write(framing.wrap(event: event.event, chunk: event.chunk), promise: nil) }
        context.flush()
        lastWrite = context.eventLoop.now
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        lastWrite = context.eventLoop.now
        context.write(data, promise: promise)
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let event = event as? ChannelEvent, event == .inputClosed { subscriber.end(.closed) }
        context.fireUserInboundEventTriggered(event)
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable { subscriber.connection.write(subscriber) }
        context.fireChannelWritabilityChanged()
    }

    private func schedule(context: ChannelHandlerContext) {
        let loop = context.eventLoop.assumeIsolated()
        beat = loop.scheduleTask(deadline: lastWrite + heartbeat) { [self] in
            beat = nil
            guard let context = self.context else { return }
            if context.eventLoop.now >= lastWrite + heartbeat {
                // Not after the stream's end (its last event may already be written), and not into
                // a socket that takes nothing: a stalled subscriber is cut off by its queue instead.
                if !subscriber.hasEnded, context.channel.isWritable {
                    send(CollectionOfOne(FeedBytes.heartbeat))
                } else {
                    lastWrite = context.eventLoop.now
                }
            }
            schedule(context: context)
        }
    }
}
