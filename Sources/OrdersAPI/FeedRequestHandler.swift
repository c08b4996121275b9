import Foundation
import HTTPTypes
import NIOCore
import NIOHTTPTypes
import LocalHTTP

/// Takes `GET /v1/orders/stream` off an orders-API connection before Hummingbird sees it, and serves
/// the feed on the connection itself, so that an idle subscriber holds no request task.
///
/// Served through Hummingbird's router, each feed kept its connection's task suspended at the bottom
/// of the router, its middleware and the response body's closure, and a task keeps the stack slabs
/// of the deepest stack it reached: about 11.7 KB of each idle subscriber's 22 KB at 10,000 of them
/// (docs/PERFORMANCE.md). Here the connection's task never gets the request: it stays waiting for a
/// request head, with a shallow stack; a short task reads the snapshot or backlog and ends; then the
/// event loop writes (``FeedConnection``).
///
/// - A feed request the feed admits (``ChangeFeed/admit(_:on:)``: token, query, a free slot) is
///   answered here. One it refuses goes on to the router, whose route answers why (401, 400, 503).
/// - Requests are answered in order: a feed request that arrives while an earlier request's answer
///   is still being written waits here, with its parts, until that answer has ended.
/// - When the feed ends, its last event and the end of the chunked body are written, and the
///   connection serves the next request. It is closed instead when the request asked for that
///   (`Connection: close`), when a request arrived behind the feed (HTTP/1.1 pipelining; answering
///   it would mean holding it for the feed's whole life), or when the server is shutting down.
///
/// It sits after Hummingbird's HTTP/1 codec (HTTP parts in, HTTP parts out) and runs on the
/// channel's event loop only, like every NIO handler.
final class FeedRequestHandler: FrontRequestHandler {

    private enum State {
        /// Requests go on to Hummingbird.
        case passing
        /// A feed request arrived while Hummingbird still owed an answer: its parts wait here.
        case waiting([HTTPRequestPart])
        /// A feed request's JWT is being verified (off the loop): its parts wait here.
        case verifying([HTTPRequestPart])
        /// A feed is served on this connection.
        case feeding(FeedSubscriber)
    }

    /// The most parts of a waiting feed request held; a `GET` has a head and an end.
    static let waitingPartsLimit = 16

    private let feed: ChangeFeed
    private var state = State.passing
    /// The answers owed to requests passed on, before a feed may start (HTTP/1.1's order).
    private var order = AnswerOrder()
    /// The feed's own request has been read to its end.
    private var feedRequestEnded = false
    /// Close the connection once the feed has ended.
    private var closeAfterFeed = false
    /// Ends the feed when its credentials do (a session's end).
    private var expiry: Scheduled<Void>?

    init(feed: ChangeFeed) {
        self.feed = feed
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        receive(unwrapInboundIn(data), context: context)
    }

    private func receive(_ part: HTTPRequestPart, context: ChannelHandlerContext) {
        switch state {
        case .passing:
            guard case .head(let head) = part, ChangeFeed.isFeedRequest(head) else {
                return order.pass(part, context: context)
            }
            if order.isClear { start([part], context: context) } else { state = .waiting([part]) }
        case .waiting(let parts):
            if let held = hold(part, after: parts, context: context) { state = .waiting(held) }
        case .verifying(let parts):
            if let held = hold(part, after: parts, context: context) { state = .verifying(held) }
        case .feeding:
            if feedRequestEnded {
                closeAfterFeed = true
            } else if case .end = part {
                feedRequestEnded = true
            }
        }
    }

    /// `parts` of a feed request that waits, and `part` after them; nil (and the connection closed)
    /// past ``waitingPartsLimit``: not a request a feed client sends (a large body on a GET).
    private func hold(_ part: HTTPRequestPart, after parts: [HTTPRequestPart], context: ChannelHandlerContext) -> [HTTPRequestPart]? {
        guard parts.count < Self.waitingPartsLimit else {
            context.close(promise: nil)
            return nil
        }
        return parts + [part]
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        context.write(data, promise: promise)
        if order.wrote(unwrapOutboundIn(data)), case .waiting(let parts) = state {
            start(parts, context: context)
            // Outside a read: a request passed on reaches Hummingbird's channel at the end of a read.
            context.fireChannelReadComplete()
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        expiry?.cancel()
        expiry = nil
        context.fireChannelInactive()
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if event is ChannelShouldQuiesceEvent, case .feeding(let subscriber) = state {
            // The server is stopping: the feed ends (its last event is written), then the connection
            // closes. Hummingbird's connection handler sees an idle connection and would close it at
            // once, before the end was written.
            closeAfterFeed = true
            subscriber.end(.closed)
            return
        }
        context.fireUserInboundEventTriggered(event)
    }

    /// Serves the feed request whose parts are `parts` (its head first), or passes them on to the
    /// router when the feed refuses it. A JWT is verified off the loop first, and `verified` is then
    /// its principal.
    private func start(_ parts: [HTTPRequestPart], context: ChannelHandlerContext, verified: APIPrincipal? = nil) {
        guard case .head(let head) = parts.first else { return passOn(parts, context: context) }
        let admitted: ChangeFeed.Admitted
        switch feed.resolve(head, verified: verified) {
        case .refused:
            return passOn(parts, context: context)
        case .verify(let token, let verifier):
            state = .verifying(parts)
            let bound = NIOLoopBound((handler: self, context: context), eventLoop: context.eventLoop)
            let (token, eventLoop) = (String(token), context.eventLoop)
            // Short and unowned, as the catch-up task below: it ends once the token is checked.
            Task {
                let principal = try? await verifier.principal(Substring(token))
                eventLoop.execute { bound.value.handler.verified(principal, context: bound.value.context) }
            }
            return
        case .access(let access):
            guard let admission = feed.admit(head, access: access, on: context.channel) else { return passOn(parts, context: context) }
            admitted = admission
        }
        let subscriber = admitted.subscriber
        // An HTTP/1.0 request: no chunked framing, and the connection's close ends the body.
        let framing = RawBodyFraming.of(context.pipeline.syncOperations).framing
        state = .feeding(subscriber)
        feedRequestEnded = false
        closeAfterFeed = framing.endsWithConnection || Self.asksToClose(head)
        for part in parts.dropFirst() { receive(part, context: context) }

        let bound = NIOLoopBound((handler: self, context: context), eventLoop: context.eventLoop)
        subscriber.onFinish { ending in bound.value.handler.finish(subscriber, ending, context: bound.value.context) }
        subscriber.connection.attach(subscriber, framing: framing)
        if let remaining = feed.remaining(subscriber.principal) {
            expiry = context.eventLoop.scheduleTask(in: remaining) { subscriber.end(.credentialsEnded) }
        }
        var responseHead = ChangeFeed.responseHead(serverName: "orderlive", date: HTTPDate.format(time(nil)))
        if let origin = head.headerFields[.origin] {
            for field in feed.cors.headers(for: origin) { responseHead.headerFields[field.name] = field.value }
        }
        context.writeAndFlush(wrapOutboundOut(.head(responseHead)), promise: nil)
        let feed = self.feed
        let eventLoop = context.eventLoop
        // Unowned on purpose, and short: it ends once the snapshot or backlog is written or a read or
        // write failed (a closed connection fails the next write). Owning one per feed would keep
        // a task per subscriber, which is what this handler exists to avoid.
        Task {
            await feed.catchUp(admitted) { buffer in
                try await eventLoop.flatSubmit {
                    let (handler, context) = bound.value
                    return context.writeAndFlush(handler.wrapOutboundOut(.body(buffer)))
                }.get()
            }
        }
    }

    /// A feed request's JWT was checked: serve it, or let the router answer why not.
    private func verified(_ principal: APIPrincipal?, context: ChannelHandlerContext) {
        guard case .verifying(let parts) = state, context.channel.isActive else { return }
        state = .passing
        if let principal { start(parts, context: context, verified: principal) } else { passOn(parts, context: context) }
        // Outside a read: what was passed on reaches Hummingbird's channel at the end of a read.
        context.fireChannelReadComplete()
    }

    /// Passes a refused feed request on to the router, whole up to its end; whatever followed it is read anew.
    private func passOn(_ parts: [HTTPRequestPart], context: ChannelHandlerContext) {
        state = .passing
        var rest = parts[...]
        while let part = rest.popFirst() {
            order.pass(part, context: context)
            if case .end = part { break }
        }
        for part in rest { receive(part, context: context) }
    }

    /// Everything the feed queued is written: writes its last event and ends the response.
    private func finish(_ subscriber: FeedSubscriber, _ ending: FeedSubscriber.Ending, context: ChannelHandlerContext) {
        guard case .feeding(let current) = state, current === subscriber else { return }
        state = .passing
        expiry?.cancel()
        expiry = nil
        feed.hub.unsubscribe(subscriber)
        subscriber.connection.detach()
        if ending == .overflow {
            context.write(wrapOutboundOut(.body(ByteBuffer(string: FeedEvents.overflow(buffer: subscriber.capacity)))), promise: nil)
        }
        let ended = context.writeAndFlush(wrapOutboundOut(.end(nil)))
        if closeAfterFeed || !feedRequestEnded {
            let channel = context.channel
            ended.whenComplete { _ in channel.close(promise: nil) }
        }
    }

    /// True when the request's `Connection` header has the `close` option (RFC 9112 §9.6).
    static func asksToClose(_ head: HTTPRequest) -> Bool {
        head.headerFields[values: .connection].contains { value in
            value.split(separator: ",").contains { $0.trimmingCharacters(in: .whitespaces).lowercased() == "close" }
        }
    }
}
