import AsyncSignals
public import CheckedInput
public import NIOCore

/// Why a listener closed a connection itself; the `reason` label of
/// `orderlive_connections_closed_total{listener,reason}`.
public enum ConnectionClosure: String, Sendable, CaseIterable {
    /// Closed to make room for a new connection: it had sent no complete request head yet, or sat
    /// idle between requests, and was the oldest such.
    case evicted
    /// A new connection closed at once: the listener was full and every connection was in the
    /// middle of a request or a response.
    case refused
    /// The peer's address is outside `allow_from`.
    case notAllowed = "not_allowed"
    /// No complete request head within the read timeout of the connection opening.
    case headTimeout = "head_timeout"
    /// No next request within the read timeout of the previous answer (keep-alive idle).
    case idleTimeout = "idle_timeout"
    /// The TLS handshake failed (plain HTTP on a TLS port, an old protocol version, a missing or
    /// untrusted client certificate).
    case tlsHandshake = "tls_handshake"
    /// HTTP/2: too many streams reset, or too many streams in error, in a short time (the 2023
    /// "rapid reset" attack, CVE-2023-44487).
    case rapidReset = "rapid_reset"
    /// HTTP/2: a flood of SETTINGS, PING or other control frames, of empty DATA or CONTINUATION
    /// frames, or of frames the peer would not read the answers to.
    case frameFlood = "frame_flood"
    /// HTTP/2: more streams open at once than `max_streams_per_connection` announced.
    case streamLimit = "stream_limit"
    /// HTTP/2: a header block larger than the listener's header limit.
    case oversizedHeaders = "oversized_headers"
    /// HTTP/2: any other connection error (a malformed frame, a protocol violation).
    case protocolError = "protocol_error"
}

/// Which connections a listener holds, and which of them may be closed to admit a new one.
///
/// At `limit`, a new connection closes the oldest connection that has not completed a request head
/// or sits idle between requests, and takes its place; one in the middle of a request or a
/// response is never closed for it. Only when every connection is busy is the new one refused. So
/// an idle or slow flood cannot hold the listener: each of its connections is the first to go
/// when a real client arrives, and a real client, which sends its head at once, is busy (safe)
/// within a round trip. Shared by every connection of one listener, on any event loop: its state
/// is behind a mutex, and a connection is closed through its channel (thread-safe in NIO).
public final class ConnectionAdmission: Sendable {
    /// The phase of one connection.
    public enum Phase: Sendable {
        /// Accepted, no complete request head yet.
        case awaitingHead
        /// A request is being read or answered (a change feed stays here until it ends).
        case busy
        /// Between requests on a keep-alive connection.
        case idle
    }

    private struct Entry {
        var phase: Phase
        /// When the connection last became evictable (a sequence number: smaller is older).
        var since: UInt64
        let channel: any Channel
    }

    private struct State {
        var entries: [ObjectIdentifier: Entry] = [:]
        var clock: UInt64 = 0
    }

    /// The most connections held at once.
    public let limit: Int
    /// The peers allowed; empty allows everyone.
    public let allowFrom: [AddressRange]
    // AsyncSignals.Locked, not Synchronization.Mutex: ThreadSanitizer cannot see Mutex's futex
    // hand-overs and reported every contended admission as a race (docs/SANITIZERS.md).
    private let state = Locked(State())
    private let closed: @Sendable (ConnectionClosure) -> Void

    /// Creates the admission of one listener; `closed` hears every connection it closes (to count
    /// and log it).
    public init(limit: Int, allowFrom: [AddressRange] = [], closed: @escaping @Sendable (ConnectionClosure) -> Void = { _ in }) {
        self.limit = max(1, limit)
        self.allowFrom = allowFrom
        self.closed = closed
    }

    /// The connections held now.
    public var current: Int { state.withLock { $0.entries.count } }

    /// Whether `address` may connect.
    public func allows(_ address: SocketAddress?) -> Bool {
        guard !allowFrom.isEmpty else { return true }
        guard let address else { return false }
        return allowFrom.contains { $0.contains(address) }
    }

    /// Admits `channel`, closing the oldest evictable connection when the listener is full; false
    /// when it must be refused.
    func admit(_ channel: any Channel) -> Bool {
        let key = ObjectIdentifier(channel)
        let outcome = state.withLock { state -> (admitted: Bool, evicted: (any Channel)?) in
            state.clock &+= 1
            var evicted: (any Channel)?
            if state.entries.count >= limit {
                var oldest: (key: ObjectIdentifier, since: UInt64)?
                for (candidate, entry) in state.entries where entry.phase != .busy {
                    if oldest.map({ entry.since < $0.since }) ?? true { oldest = (candidate, entry.since) }
                }
                guard let oldest, let entry = state.entries.removeValue(forKey: oldest.key) else { return (false, nil) }
                evicted = entry.channel
            }
            state.entries[key] = Entry(phase: .awaitingHead, since: state.clock, channel: channel)
            return (true, evicted)
        }
        if let evicted = outcome.evicted {
            closed(.evicted)
            evicted.close(promise: nil)
        }
        if !outcome.admitted { closed(.refused) }
        return outcome.admitted
    }

    /// Notes that `channel` entered `phase`.
    func enter(_ phase: Phase, _ channel: any Channel) {
        let key = ObjectIdentifier(channel)
        state.withLock { state in
            guard state.entries[key] != nil else { return }
            state.clock &+= 1
            state.entries[key]?.phase = phase
            if phase != .busy { state.entries[key]?.since = state.clock }
        }
    }

    /// Gives `channel`'s place back (it closed).
    func release(_ channel: any Channel) {
        _ = state.withLock { $0.entries.removeValue(forKey: ObjectIdentifier(channel)) }
    }

    /// Reports a connection closed for `reason` by a handler of the listener.
    func report(_ reason: ConnectionClosure) {
        closed(reason)
    }
}

/// The first handler of every connection: closes it at once when its peer is outside `allow_from`
/// or the listener is full with busy connections (``ConnectionAdmission``), and gives its place
/// back when it closes. It runs on the channel's event loop only.
public final class AdmissionHandler: ChannelInboundHandler, RemovableChannelHandler {
    public typealias InboundIn = NIOAny

    private let admission: ConnectionAdmission
    private var admitted = false
    private var decided = false

    /// Creates the handler of one connection.
    public init(admission: ConnectionAdmission) {
        self.admission = admission
    }

    public func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { decide(context) }
    }

    public func channelActive(context: ChannelHandlerContext) {
        decide(context)
        if admitted { context.fireChannelActive() }
    }

    public func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard admitted else { return }
        context.fireChannelRead(data)
    }

    public func channelInactive(context: ChannelHandlerContext) {
        giveBack(context)
        context.fireChannelInactive()
    }

    public func handlerRemoved(context: ChannelHandlerContext) {
        giveBack(context)
    }

    private func decide(_ context: ChannelHandlerContext) {
        guard !decided else { return }
        decided = true
        guard admission.allows(context.channel.remoteAddress) else {
            admission.report(.notAllowed)
            context.close(promise: nil)
            return
        }
        admitted = admission.admit(context.channel)
        if !admitted { context.close(promise: nil) }
    }

    private func giveBack(_ context: ChannelHandlerContext) {
        if admitted {
            admitted = false
            admission.release(context.channel)
        }
    }
}
