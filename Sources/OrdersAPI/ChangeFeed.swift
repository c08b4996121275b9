import CheckedInput
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdCore
import Logging
import NIOCore
import StoreModel
import LocalHTTP

/// `GET /v1/orders/stream` (DESIGN §11): a new subscriber gets a snapshot and `ready`; one that
/// resumes gets the changes it missed, or `reset` and a snapshot when its id cannot be resumed; then
/// live changes in `seq` order from the hub, heartbeats when idle, and `overflow` if it falls behind.
///
/// A feed holds no request task: ``FeedRequestHandler`` takes the request off the connection before
/// Hummingbird sees it, a short task writes the snapshot or backlog (``catchUp(_:write:)``), and the
/// connection's event loop writes everything after it. Requests the feed refuses go on to the router,
/// whose route answers them (``refusal(_:)``).
struct ChangeFeed: Sendable {
    let hub: ChangeHub
    /// Authentication, scope and audit.
    let gate: APIGate
    /// The origins whose pages may read the feed (`api.cors_origins`).
    let cors: CORSPolicy
    let logger: Logger

    /// Where a subscriber starts.
    enum Start: Sendable {
        /// No id: a snapshot.
        case fresh
        /// After this seq.
        case after(Int64)
        /// An id that is not a change id at all.
        case unreadable
    }

    /// A request the feed serves: its subscriber, registered with the hub, and where it starts.
    struct Admitted: Sendable {
        var subscriber: FeedSubscriber
        var start: Start
    }

    static let lastEventID = HTTPField.Name("Last-Event-ID")
    static let accelBuffering = HTTPField.Name("X-Accel-Buffering")

    /// The writes are gathered up to this size before each socket write of a snapshot or backlog.
    static let chunkBytes = 64 * 1024

    /// The route's path, as the router matches it.
    static let path = "/v1/orders/stream"

    /// True for a `GET` of the feed's path (with or without a query, and with the slashes the router
    /// ignores: empty path components).
    static func isFeedRequest(_ head: HTTPRequest) -> Bool {
        guard head.method == .get, let target = head.path else { return false }
        let path = target.utf8.split(separator: UInt8(ascii: "?"), maxSplits: 1, omittingEmptySubsequences: false).first ?? []
        let components = path.split(separator: UInt8(ascii: "/"))
        return components.count == 3 && components[0].elementsEqual("v1".utf8) && components[1].elementsEqual("orders".utf8)
            && components[2].elementsEqual("stream".utf8)
    }

    /// What a feed request comes to without waiting.
    enum Resolution {
        /// Served with this access, if the hub has room.
        case access(APIAccess)
        /// Refused: the router's route answers why.
        case refused
        /// It presents a JWT, verified off the event loop (``verify(_:)``) before the feed is served.
        case verify(Substring, JWTVerifier)
    }

    /// What `head` comes to; `verified` is the principal of its JWT once verified. Nothing is
    /// counted here: a refused request is counted by the route that answers it.
    func resolve(_ head: HTTPRequest, verified: APIPrincipal? = nil) -> Resolution {
        let uri = URI(head.path ?? "")
        let principal: APIPrincipal
        if let verified {
            principal = verified
        } else {
            switch try? gate.authentication.presented(headers: head.headerFields, uri: uri) {
            case nil: return .refused
            case .principal(let presented)?: principal = presented
            case .jwt(let token, let verifier)?: return .verify(token, verifier)
            }
        }
        guard let access = try? APIAccess(principal: principal, uri: uri, query: .filtersAndSince) else { return .refused }
        return .access(access)
    }

    /// Registers the subscriber of a feed request with `access`, or nil when the hub is full or
    /// stopping: the router's route then answers it (503).
    func admit(_ head: HTTPRequest, access: APIAccess, on channel: any Channel) -> Admitted? {
        // The browser's EventSource sends Last-Event-ID when it reconnects, even when the URL it was
        // first opened with carried ?since=: the header is the newer position. An empty one is no id
        // at all, as WHATWG's EventSource treats an empty last event ID (and so is an empty ?since=).
        let header = Self.lastEventID.flatMap { head.headerFields[$0] }.map { Substring($0) }
        let position = Self.position(header) ?? Self.position(access.since)
        let start: Start
        if let position {
            start = Checked.int64(decimal: position).map(Start.after) ?? .unreadable
        } else {
            start = .fresh
        }
        guard let subscriber = hub.subscribe(filter: access.filter, principal: access.principal, on: channel) else {
            hub.metrics.record(.refused)
            return nil
        }
        gate.audit.record(.ok, principal: access.principal)
        gate.audit.subscribed(access.principal, filter: access.filter.storeIDs.sorted().joined(separator: ","))
        return Admitted(subscriber: subscriber, start: start)
    }

    /// How long `principal`'s credentials last from now, when they end at a time (a session).
    func remaining(_ principal: APIPrincipal) -> TimeAmount? {
        guard let expiresAt = principal.expiresAt, let now = gate.authentication.credentials?.now() else { return nil }
        let seconds = max(0, min(expiresAt - now, 366 * 86_400))
        return .nanoseconds(Int64(seconds * 1e9))
    }

    /// An id as given, nil when absent or empty (blanks around it are not part of it).
    static func position(_ given: Substring?) -> Substring? {
        guard let trimmed = given?.trimmingCharacters(in: .whitespaces), !trimmed.isEmpty else { return nil }
        return Substring(trimmed)
    }

    /// The answer to a feed request ``admit(_:on:)`` refused, given by the router's route; and to a
    /// `HEAD` of the feed, which the feed never takes: the head a `GET` with the same credentials and
    /// query would get, without its body.
    func refusal(_ request: Request) async -> Response {
        do throws(APIDenial) {
            _ = try await gate.access(request, route: Self.path, query: .filtersAndSince)
        } catch {
            return error.response
        }
        if request.method == .head {
            var headers = HTTPFields()
            headers[.contentType] = "text/event-stream; charset=utf-8"
            headers[.cacheControl] = "no-cache"
            return Response(status: .ok, headers: headers)
        }
        return JSONError(.serviceUnavailable,
                         "this agent serves its most subscribers (api.max_subscribers) or is stopping; retry later",
                         retryAfter: 5).response
    }

    /// The head of a feed's response.
    static func responseHead(serverName: String, date: String) -> HTTPResponse {
        var headers = HTTPFields()
        headers[.contentType] = "text/event-stream; charset=utf-8"
        headers[.cacheControl] = "no-cache"
        // Tells nginx and similar reverse proxies to pass each event on at once (README: reverse proxy).
        if let accelBuffering = Self.accelBuffering { headers[accelBuffering] = "no" }
        headers[.server] = serverName
        headers[.date] = date
        return HTTPResponse(status: .ok, headerFields: headers)
    }

    /// Writes the subscriber's snapshot or backlog through `write`, then puts it live: from then on
    /// its connection's event loop writes. When the store cannot be read or the write fails, the
    /// stream ends (the client reconnects and resumes).
    func catchUp(_ admitted: Admitted, write: (ByteBuffer) async throws -> Void) async {
        let subscriber = admitted.subscriber
        do {
            try await Self.catchUp(subscriber, from: admitted.start, hub: hub, write: write, logger: logger)
        } catch {
            subscriber.end(.closed)
        }
        subscriber.goLive()
    }

    /// A store read failed while catching up.
    struct FeedStoreError: Error {}

    private static func catchUp(
        _ subscriber: FeedSubscriber, from start: Start, hub: ChangeHub, write: (ByteBuffer) async throws -> Void, logger: Logger
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
                    try await write(buffer)
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
                    try await write(buffer)
                    buffer.clear()
                }
            }
            buffer.writeString(FeedEvents.ready(snapshot.seq))
            subscriber.caughtUp(through: snapshot.seq)
        }
        try await write(buffer)
    }
}
