import AsyncSignals
import CheckedInput
import Logging
import PostgresNIO
#if canImport(Glibc)
import Glibc
#endif

/// Deadlines on database round trips (DESIGN §10). A network that silently stops passing packets
/// (no RST, no FIN: a failed switch, a changed firewall, a NAT timeout) makes a query hang, not
/// fail: without a deadline a push waited 48 s and more for its journal write. Every round trip
/// therefore has one; a connection that missed it is closed at once (closing is local, it never
/// waits for the peer) and so never reused, and the kernel is told to give up on a dead peer too.
extension PostgresConnection {
    /// Runs `body` on this connection; after `limit` the call fails with ``DatabaseTimeout`` and the
    /// connection is closed, whatever `body` is waiting for. `body` runs in a task of its own that
    /// is abandoned then: a query in flight on a connection that stopped answering was seen never to
    /// return (PostgresNIO 1.33), and a task group would wait for it.
    @discardableResult
    func answering<T: Sendable>(
        within limit: Duration, _ body: @escaping @Sendable (PostgresConnection) async throws -> T
    ) async throws -> T {
        try await DeadlineRace.run(within: limit, timeout: { DatabaseTimeout(limit: limit) }, timedOut: { self.discard() }) {
            try await body(self)
        }
    }

    /// Closes the connection without waiting for anything: a connection that missed a deadline is
    /// not trusted again (its next answer could be the late answer to the last question).
    func discard() {
        close().whenComplete { _ in withExtendedLifetime(self) {} }
    }
}

/// A database round trip that did not answer within its deadline; its connection was closed.
public struct DatabaseTimeout: Error, Sendable, Hashable, CustomStringConvertible {
    /// The deadline that passed.
    public var limit: Duration

    public var description: String {
        "the database did not answer within \(limit) (a network partition, or a server that stopped "
            + "answering); the connection was closed"
    }
}

/// TCP keepalive and `TCP_USER_TIMEOUT` on a database connection, so the kernel, too, gives up on
/// a peer that stopped answering within `failover_s`: keepalive probes find an idle connection dead
/// (idle + 3 unanswered probes, a quarter of `failover_s` each), and the user timeout ends a connection
/// whose sent data stays unacknowledged for `failover_s`.
///
/// PostgresNIO 1.33 gives no way to set socket options on the connections it makes (its bootstrap is
/// internal, and the pool makes its own), so the option is set on the connection's channel once it
/// is open, found by reflection of PostgresNIO's stored `channel` property. Should a later PostgresNIO
/// rename it, nothing fails here — the round-trip deadlines still bound every wait — and
/// `PostgresDeadlineTests` fails, saying so.
enum DatabaseSocket {
    /// The connection's channel, when PostgresNIO still keeps it under that name.
    static func channel(of connection: PostgresConnection) -> (any Channel)? {
        Mirror(reflecting: connection).children.first { $0.label == "channel" }?.value as? any Channel
    }

    /// The options for a peer given up on after `failover`.
    static func options(failover: Duration) -> [(ChannelOptions.Types.SocketOption, SocketOptionValue)] {
        let milliseconds = max(1_000, Checked.milliseconds(of: failover))
        let probe = SocketOptionValue(clamping: max(1, milliseconds / 4_000))
        func tcp(_ name: Int32) -> ChannelOptions.Types.SocketOption {
            ChannelOptions.Types.SocketOption(level: NIOBSDSocket.OptionLevel(rawValue: Int32(IPPROTO_TCP)),
                                              name: NIOBSDSocket.Option(rawValue: name))
        }
        return [
            (ChannelOptions.Types.SocketOption(level: .socket, name: .so_keepalive), 1),
            (tcp(TCP_KEEPIDLE), probe), (tcp(TCP_KEEPINTVL), probe), (tcp(TCP_KEEPCNT), 3),
            (tcp(TCP_USER_TIMEOUT), SocketOptionValue(clamping: milliseconds)),
        ]
    }

    /// Sets the options on `connection`'s socket; false when its channel cannot be found or an
    /// option is refused (a Unix socket has no TCP options; the connection works as before).
    @discardableResult
    static func configure(_ connection: PostgresConnection, failover: Duration) async -> Bool {
        guard let channel = channel(of: connection) else { return false }
        do {
            for (option, value) in options(failover: failover) {
                try await channel.setOption(option, value: value).get()
            }
            return true
        } catch {
            return false
        }
    }
}

/// The pooled connections this store has leased, by id: which already have their socket options,
/// and which to close when one of them misses a deadline. PostgresNIO's pool cannot tell a connection
/// behind a dead network path from an idle one (nothing is sent on an idle connection), so one missed
/// deadline condemns them all: every connection the pool holds is closed at once — idle ones, and
/// those other calls are waiting on, which then fail at once instead of at their own deadlines —
/// and the pool makes new ones for the next calls. A partition then leaves no socket of the agent's
/// open past one round trip's deadline; a database that was only slow costs some reconnections.
/// The pool may also hold a connection no call has leased yet (made for a call another connection
/// then served): unknown here, it is not closed with the others, so for `failover_s` after a discard
/// a connection leased for the first time must answer a ping within a quarter of `failover_s` first
/// (``mustProve(within:)``). Closed connections are forgotten as new ones come; past `bound` entries
/// the set is cleared, so a long-lived agent's reconnections cannot grow it.
struct ConfiguredSockets: Sendable {
    private let connections = Locked([Int: PostgresConnection]())
    private let discarded = Locked<ContinuousClock.Instant?>(nil)
    private let bound: Int

    init(bound: Int) {
        self.bound = max(16, bound)
    }

    /// True the first time `connection` is seen (since it was forgotten); it is held until it closes.
    func isNew(_ connection: PostgresConnection) -> Bool {
        connections.withLock { connections in
            if connections[connection.id] != nil { return false }
            if connections.count >= bound {
                connections = connections.filter { !$0.value.isClosed }
                if connections.count >= bound { connections.removeAll(keepingCapacity: true) }
            }
            connections[connection.id] = connection
            return true
        }
    }

    /// True when the last ``discardAll()`` was less than `window` ago: a connection seen for the first
    /// time now may have been made before it, on the path it condemned.
    func mustProve(within window: Duration) -> Bool {
        discarded.withLock { $0.map { ContinuousClock().now - $0 < window } ?? false }
    }

    /// Closes every connection held, without waiting for anything, and forgets them.
    func discardAll() {
        discarded.withLock { $0 = ContinuousClock().now }
        let condemned = connections.withLock { connections in
            defer { connections.removeAll(keepingCapacity: true) }
            return Array(connections.values)
        }
        for connection in condemned where !connection.isClosed { connection.discard() }
    }
}
