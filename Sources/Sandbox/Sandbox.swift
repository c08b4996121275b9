// Sandbox: orderlive's reference order backend. It serves the upstream contract of DESIGN §3 on
// loopback for `orderlive demo`, `orderlive sandbox`, the tests and the benchmarks, and can be
// scripted byte for byte to misbehave. It must never be needed by the agent itself.

import AsyncSignals
import CheckedInput
import HTTPTypes
import Hummingbird
public import Logging
import NIOCore
import ServerSentEvents
import ServiceLifecycle

/// How the Sandbox listens and what its live feed sends.
public struct SandboxConfiguration: Sendable {
    /// The address to bind; loopback by default.
    public var host: String
    /// The port; 0 picks a free one (see ``Sandbox/port``).
    public var port: Int
    /// Time between live order events.
    public var eventInterval: Duration
    /// Time between `: ping` comments on a live stream with nothing else to send.
    public var heartbeatInterval: Duration
    /// How many distinct orders the live feed cycles through.
    public var orderCount: Int
    /// Users, token lifetimes and whether the event stream requires a bearer token.
    public var auth: SandboxAuthConfiguration
    /// What an unscripted `GET /v1/events` serves.
    public var feed: Feed
    /// How many events the order book's log keeps (older cursors get `orders.resync`).
    public var orderRetention: Int
    /// With the order-book feed: change the book by itself every `eventInterval` (create, move an
    /// order through its lifecycle, sometimes delete), so `GET /v1/orders` and the stream agree.
    public var changesOrders: Bool

    /// The unscripted event stream.
    public enum Feed: Sendable, Hashable {
        /// Synthetic order events every `eventInterval`, a pure function of the sequence number.
        case synthetic
        /// The changes made to ``Sandbox/orders`` (the order book), with retention and resync.
        case orderBook
    }

    /// Creates a configuration.
    public init(
        host: String = "127.0.0.1",
        port: Int = 8070,
        eventInterval: Duration = .seconds(1),
        heartbeatInterval: Duration = .seconds(15),
        orderCount: Int = 12,
        auth: SandboxAuthConfiguration = .init(),
        feed: Feed = .synthetic,
        orderRetention: Int = 10_000,
        changesOrders: Bool = false
    ) {
        self.host = host
        self.port = port
        self.eventInterval = eventInterval
        self.heartbeatInterval = heartbeatInterval
        self.orderCount = max(1, orderCount)
        self.auth = auth
        self.feed = feed
        self.orderRetention = orderRetention
        self.changesOrders = changesOrders
    }
}

/// A request the Sandbox received, as tests inspect it.
public struct RecordedRequest: Sendable {
    /// The method.
    public var method: String
    /// The path without the query.
    public var path: String
    /// Header fields, names lower-cased, in order.
    public var headers: [(name: String, value: String)]

    /// The first value of a header (case-insensitive), or nil.
    public func header(_ name: String) -> String? {
        let lowered = name.lowercased()
        return headers.first { $0.name == lowered }?.value
    }
}

/// The reference backend. Start it with ``run(onRunning:)`` inside a task, or use
/// ``withRunning(_:logger:_:)``; it stops when that task is cancelled.
public final class Sandbox: Sendable {
    private struct State {
        var scripts: [StreamScript] = []
        var released: Set<String> = []
        var gateWaiters: [String: [CheckedContinuation<Void, Never>]] = [:]
        var streamRequests = 0
        /// The service group serving, while ``run(onRunning:)`` runs; for ``stop()``.
        var serving: ServiceGroup?
        /// ``stop()`` came before ``run(onRunning:)`` had its group.
        var stopRequested = false
    }

    /// The configuration it was made with.
    public let configuration: SandboxConfiguration
    private let state = Locked(State())
    private let bound = OneShot<Int>()
    let authority: SandboxAuthority
    /// The orders `GET /v1/orders` serves and the order-book feed announces.
    public let orders: OrderBook
    private let logger: Logger
    private let recorded: AsyncStream<RecordedRequest>.Continuation
    /// Every request to the event stream, in arrival order.
    public let streamRequests: AsyncStream<RecordedRequest>

    /// Creates a Sandbox; it does not listen until ``run(onRunning:)``.
    public init(configuration: SandboxConfiguration = .init(), logger: Logger = Logger(label: "orderlive.sandbox")) {
        self.configuration = configuration
        self.authority = SandboxAuthority(configuration: configuration.auth)
        self.orders = OrderBook(retention: configuration.orderRetention)
        self.logger = logger
        (streamRequests, recorded) = AsyncStream.makeStream(of: RecordedRequest.self)
    }

    /// Queues scripted answers for the next event-stream requests, in order.
    public func enqueue(_ scripts: StreamScript...) {
        state.withLock { $0.scripts.append(contentsOf: scripts) }
    }

    /// Opens the gate a script's ``StreamScript/Step/waitFor(_:)`` waits on.
    public func release(_ gate: String) {
        let waiters = state.withLock { state in
            state.released.insert(gate)
            return state.gateWaiters.removeValue(forKey: gate) ?? []
        }
        for waiter in waiters { waiter.resume() }
    }

    /// The next refreshes answer these statuses (for example 503, 503) instead of rotating.
    public func failRefreshes(_ statuses: Int...) {
        authority.failRefreshes(statuses)
    }

    /// The next logins answer these statuses instead of checking credentials.
    public func failLogins(_ statuses: Int...) {
        authority.failLogins(statuses)
    }

    /// Revokes every refresh token issued so far: the next refresh with any of them answers 401.
    public func revokeAllRefreshTokens() {
        authority.revokeAllRefreshTokens()
    }

    /// Invalidates every access token issued so far, as if they had all expired: the next stream or
    /// orders request with one answers 401 and the client must refresh.
    public func expireAccessTokens() {
        authority.expireAccessTokens()
    }

    /// Requests per auth endpoint so far.
    public var authCounters: SandboxAuthCounters {
        authority.counters
    }

    /// How many event-stream requests arrived so far.
    public var streamRequestCount: Int {
        state.withLock { $0.streamRequests }
    }

    /// The bound port, once listening.
    public var port: Int {
        get async { await bound.value }
    }

    /// `http://host:port` once listening.
    public var baseURL: String {
        get async { "http://\(configuration.host):\(await port)" }
    }

    /// Serves until ``stop()`` (or until the task is cancelled). `onRunning` gets the bound port.
    public func run(onRunning: @escaping @Sendable (Int) async -> Void = { _ in }) async throws {
        let router = Router()
        router.get("/healthz") { _, _ in HTTPResponse.Status.ok }
        router.get("/v1/events") { [self] request, _ in
            streamResponse(for: request)
        }
        addDiagnosticRoutes(to: router)
        addAuthRoutes(to: router)
        addOrderRoutes(to: router)
        addControlRoutes(to: router)
        let app = Application(
            router: router,
            configuration: .init(address: .hostname(configuration.host, port: configuration.port),
                                 serverName: "orderlive-sandbox"),
            onServerRunning: { [self] channel in
                let port = channel.localAddress?.port ?? configuration.port
                bound.give(port)
                await onRunning(port)
            },
            logger: logger
        )
        var services: [any Service] = [app]
        if configuration.feed == .orderBook, configuration.changesOrders { services.append(OrderChanges(sandbox: self)) }
        // A graceful shutdown lets the server close its listening socket and take every connection
        // already accepted; a stream still open after the grace is then cancelled.
        var group = ServiceGroupConfiguration(services: services, logger: logger)
        group.maximumGracefulShutdownDuration = .milliseconds(500)
        let serving = ServiceGroup(configuration: group)
        let stopNow = state.withLock { state in
            state.serving = serving
            return state.stopRequested
        }
        if stopNow { await serving.triggerGracefulShutdown() }
        try await serving.run()
    }

    /// Stops a running Sandbox the way a server should stop: it accepts no new connection, answers
    /// the ones it accepted, and cancels what is still open (a live event stream) after half a second;
    /// ``run(onRunning:)`` then returns. Cancelling the task that runs it instead can crash the
    /// process in swift-nio when a connection was accepted but not yet served (apple/swift-nio#2637).
    public func stop() async {
        let serving = state.withLock { state in
            state.stopRequested = true
            return state.serving
        }
        await serving?.triggerGracefulShutdown()
    }

    /// The order book's own changes, ending with the Sandbox's graceful shutdown.
    private struct OrderChanges: Service {
        let sandbox: Sandbox

        func run() async throws {
            do {
                try await cancelWhenGracefulShutdown { try await sandbox.changeOrders() }
            } catch is CancellationError {
                // Stopped: the group ends it, gracefully or not.
            }
        }
    }

    /// Walks orders through their lifecycle, one change every `eventInterval`, until cancelled, as a
    /// small business's day looks: orders from three stores with their totals and notes, a courier
    /// assigned when an order is (and kept as it moves), some orders cancelled before they are
    /// picked up, and finished or cancelled orders removed a step later.
    fileprivate func changeOrders() async throws {
        var step = 0
        var created = 0
        var active: [Int: Int] = [:]  // id → index into OrderFeed.statuses; -1 once cancelled
        while true {
            try await Task.sleep(for: configuration.eventInterval)
            step += 1
            // One step in seven is a new order: about as many as the other steps finish, so the
            // board holds a steady day's worth rather than a growing pile of new ones.
            if active.count < 12 || step % 7 == 0 {
                created += 1
                let order = Self.demoOrder(created)
                let id = orders.create(storeID: order.store, totalCents: order.cents, note: order.note,
                                       announce: step % 4 == 0 ? .idOnly : .fullBody)
                active[id] = 0
                continue
            }
            guard let id = active.keys.sorted()[safe: step % active.count], let index = active[id] else { continue }
            let announce: OrderAnnouncement = step % 5 == 0 ? .idOnly : .fullBody
            if index >= 0, index <= 1, step % 9 == 4 {
                active[id] = -1
                orders.update(id, status: "cancelled", announce: announce)
            } else if index >= 0, index + 1 < OrderFeed.statuses.count {
                active[id] = index + 1
                // Assigned: a courier takes it (one of seven), and keeps it to the door.
                orders.update(id, status: OrderFeed.statuses[index + 1], courierID: index == 0 ? 100 + id % 7 : nil,
                              announce: announce)
            } else {
                active[id] = nil
                orders.delete(id)
            }
        }
    }

    /// The store, total (cents) and note of the demo's `number`th order: varied, fixed by `number`.
    static func demoOrder(_ number: Int) -> (store: Int, cents: Int, note: String) {
        let notes = [
            "Ring twice, flat 3B", "Leave with the concierge", "No onions, extra napkins", "Call on arrival",
            "Fragile: two glass bottles", "Back door, by the bike racks", "Contactless, please", "",
        ]
        let mixed = (number &* 2_654_435_761) & 0x7FFF_FFFF
        return (store: number % 3 + 1, cents: 1_250 + mixed % 5_400, note: notes[mixed % notes.count])
    }

    // MARK: Event stream

    private func streamResponse(for request: Request) -> Response {
        let recordedRequest = RecordedRequest(
            method: request.method.rawValue,
            path: request.uri.path,
            headers: request.headers.map { (name: $0.name.canonicalName, value: $0.value) })
        if configuration.auth.requiresAuthentication,
           Self.bearerToken(request).flatMap({ authority.validate(accessToken: $0) }) == nil {
            state.withLock { $0.streamRequests += 1 }
            authority.countRejectedStream()
            recorded.yield(recordedRequest)
            return Self.json(401, #"{"error":"invalid_token"}"#)
        }
        let script: StreamScript? = state.withLock { state in
            state.streamRequests += 1
            return state.scripts.isEmpty ? nil : state.scripts.removeFirst()
        }
        recorded.yield(recordedRequest)
        if let script { return scripted(script) }
        if configuration.feed == .orderBook { return orderBookStream(after: recordedRequest.header("last-event-id")) }
        return live(resumingAfter: recordedRequest.header("last-event-id"))
    }

    private func scripted(_ script: StreamScript) -> Response {
        var headers = HTTPFields()
        for (name, value) in script.headers {
            if let field = HTTPField.Name(name) { headers.append(HTTPField(name: field, value: value)) }
        }
        let status = HTTPResponse.Status(code: script.status)
        if script.steps.isEmpty, status.code == 204 || status.code == 304 || status.code < 200 {
            return Response(status: status, headers: headers)
        }
        return Response(status: status, headers: headers, body: ResponseBody { [self] writer in
            for step in script.steps {
                switch step {
                case .send(let bytes):
                    try await writer.write(ByteBuffer(bytes: bytes))
                case .pause(let duration):
                    try await Task.sleep(for: duration)
                case .hold:
                    while true { try await Task.sleep(for: .seconds(3600)) }
                case .drop:
                    throw SandboxDrop()
                case .waitFor(let gate):
                    await wait(for: gate)
                }
            }
            try await writer.finish(nil)
        })
    }

    private func wait(for gate: String) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let open = state.withLock { state in
                if state.released.contains(gate) { return true }
                state.gateWaiters[gate, default: []].append(continuation)
                return false
            }
            if open { continuation.resume() }
        }
    }

    /// A client's `Last-Event-ID` as a sequence number: digits only and at most 2^53, else 0 (a new
    /// client). Checked before the `+ 1` that once trapped on `9223372036854775807`.
    static func sequence(_ lastEventID: String?) -> Int {
        lastEventID.flatMap { Checked.int(decimal: $0, in: 0...(1 << 53)) } ?? 0
    }

    private func live(resumingAfter lastEventID: String?) -> Response {
        let first = Self.sequence(lastEventID) + 1
        let feed = OrderFeed(orderCount: configuration.orderCount)
        let interval = configuration.eventInterval
        let heartbeat = configuration.heartbeatInterval
        var headers = HTTPFields()
        headers[.contentType] = "text/event-stream"
        headers[.cacheControl] = "no-cache"
        return Response(status: .ok, headers: headers, body: ResponseBody { writer in
            try await writer.write(ByteBuffer(
                string: ServerSentEventWriter.comment("orderlive sandbox live feed") + ServerSentEventWriter.retry(milliseconds: 1000)))
            var sequence = first
            var sinceHeartbeat = Duration.zero
            while true {
                try await Task.sleep(for: interval)
                sinceHeartbeat += interval
                try await writer.write(ByteBuffer(string: feed.wireEvent(sequence: sequence)))
                sequence += 1
                if sinceHeartbeat >= heartbeat {
                    sinceHeartbeat = .zero
                    try await writer.write(ByteBuffer(string: ServerSentEventWriter.comment("ping")))
                }
            }
        })
    }
}

struct SandboxDrop: Error {}

extension Array {
    subscript(safe index: Int) -> Element? {
        indices.contains(index) ? self[index] : nil
    }
}
