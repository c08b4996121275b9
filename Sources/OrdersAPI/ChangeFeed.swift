import CheckedInput
import HTTPTypes
import Hummingbird
import HummingbirdCore
import Logging
import NIOCore
import OrderStore
import PushIngest

/// `GET /v1/orders/stream` (DESIGN §11): a new subscriber gets a snapshot and `ready`; one that
/// resumes gets the changes it missed, or `reset` and a snapshot when its id cannot be resumed; then
/// live changes in `seq` order from the hub, heartbeats when idle, and `overflow` if it falls behind.
struct ChangeFeed: Sendable {
    let hub: ChangeHub
    let logger: Logger

    /// Where a subscriber starts.
    enum Start {
        /// No id: a snapshot.
        case fresh
        /// After this seq.
        case after(Int64)
        /// An id that is not a change id at all.
        case unreadable
    }

    static let lastEventID = HTTPField.Name("Last-Event-ID")
    static let accelBuffering = HTTPField.Name("X-Accel-Buffering")

    /// The writes are gathered up to this size before each socket write of a snapshot or backlog.
    static let chunkBytes = 64 * 1024

    func respond(to request: Request, on channel: any Channel) -> Response {
        let query: APIQuery
        do throws(APIRefusal) { query = try APIQuery(request.uri, allowsSince: true) } catch { return PushEndpoint.json(.badRequest, error.message) }
        // The browser's EventSource sends Last-Event-ID when it reconnects, even when the URL it was
        // first opened with carried ?since=: the header is the newer position.
        let position = Self.lastEventID.flatMap { request.headers[$0] }.map { Substring($0) } ?? query.since
        let start: Start
        if let position {
            start = Checked.int64(decimal: position).map(Start.after) ?? .unreadable
        } else {
            start = .fresh
        }
        guard let subscriber = hub.subscribe(filter: query.filter, on: channel) else {
            hub.metrics.record(.refused)
            return PushEndpoint.json(.serviceUnavailable,
                                     "this agent serves its most subscribers (api.max_subscribers) or is stopping; retry later",
                                     retryAfter: 5)
        }
        var headers = HTTPFields()
        headers[.contentType] = "text/event-stream; charset=utf-8"
        headers[.cacheControl] = "no-cache"
        // Tells nginx and similar reverse proxies to pass each event on at once (README: reverse proxy).
        if let accelBuffering = Self.accelBuffering { headers[accelBuffering] = "no" }
        subscriber.connection.attach(subscriber)
        let hub = self.hub
        let logger = self.logger
        return Response(status: .ok, headers: headers, body: ResponseBody { writer in
            defer {
                hub.unsubscribe(subscriber)
                subscriber.connection.detach()
            }
            do {
                try await Self.serve(subscriber, from: start, hub: hub, writer: &writer, logger: logger)
            } catch is FeedStoreError {
                // The store could not be read: the stream ends and the client reconnects to resume.
            }
            try await writer.finish(nil)
        })
    }

    /// A store read failed while catching up.
    struct FeedStoreError: Error {}

    private static func serve(
        _ subscriber: FeedSubscriber, from start: Start, hub: ChangeHub, writer: inout any ResponseBodyWriter, logger: Logger
    ) async throws {
        var buffer = ByteBuffer(string: FeedEvents.retry)
        var resetReason: String?
        switch start {
        case .fresh:
            hub.metrics.record(.new)
        case .unreadable:
            resetReason = "the id is not a change id of this feed"
        case .after(let seq):
            var cursor = seq
            catchingUp: while true {
                let page: ChangesAfter
                do {
                    page = try await hub.store.changes(after: cursor, limit: 1_000)
                } catch {
                    logger.error("the change feed cannot read the order store", metadata: ["api.reason": "\(error)"])
                    throw FeedStoreError()
                }
                switch page {
                case .reset(let reason):
                    resetReason = reason
                    break catchingUp
                case .changes(let changes):
                    guard let last = changes.last else {
                        subscriber.caughtUp(through: cursor)
                        hub.metrics.record(.resumed)
                        break catchingUp
                    }
                    for change in changes {
                        if let bytes = FeedChange(change).bytes(for: subscriber.filter) { buffer.writeImmutableBuffer(bytes.event) }
                    }
                    cursor = last.seq
                    try await writer.write(buffer)
                    buffer.clear()
                }
            }
        }
        if case .after = start, resetReason == nil {
            // Resumed: straight on to live changes.
        } else {
            if let resetReason {
                hub.metrics.record(.reset)
                buffer.writeString(FeedEvents.reset(resetReason))
            }
            let snapshot: OrderSnapshot
            do {
                snapshot = try await hub.store.snapshot(matching: subscriber.filter)
            } catch {
                logger.error("the change feed cannot read the order store", metadata: ["api.reason": "\(error)"])
                throw FeedStoreError()
            }
            for order in snapshot.orders {
                buffer.writeString(FeedEvents.snapshot(order))
                if buffer.readableBytes >= chunkBytes {
                    try await writer.write(buffer)
                    buffer.clear()
                }
            }
            buffer.writeString(FeedEvents.ready(snapshot.seq))
            subscriber.caughtUp(through: snapshot.seq)
        }
        try await writer.write(buffer)
        // Live, the connection's event loop writes the hub's changes (FeedConnection); this task
        // waits for the end and writes the last event. It keeps no buffer meanwhile: the snapshot's
        // could be 64 KiB, and times 10,000 subscribers that would be most of the agent's memory.
        buffer = ByteBuffer()
        subscriber.goLive()
        if await subscriber.finished() == .overflow {
            try await writer.write(ByteBuffer(string: FeedEvents.overflow(buffer: subscriber.capacity)))
        }
    }
}
