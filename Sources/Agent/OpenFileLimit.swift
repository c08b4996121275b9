#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The process's open-file limit (`RLIMIT_NOFILE`), raised at start-up so that
/// `ingest.max_connections` and `api.max_connections` can really be held: each connection is a file
/// descriptor, and running out of them would stop the listeners accepting anyone, the supervisor's
/// health checks included.
enum OpenFileLimit {
    /// Descriptors kept for everything but connections: the database, the stream, curl, logs.
    static let reserve = 128
    /// `RLIM_INFINITY` (all bits set on Linux; the C macro does not import into Swift).
    static let unlimited = rlim_t.max

    /// Raises the soft limit toward the hard limit until `connections` plus the reserve fit, and
    /// returns the soft limit now in force (`Int.max` when unlimited or unreadable).
    static func raise(toHold connections: Int) -> Int {
        let needed = connections > Int(Int32.max) - reserve ? Int(Int32.max) : connections + reserve
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return Int.max }
        if limit.rlim_cur != Self.unlimited, limit.rlim_cur < rlim_t(needed) {
            let target = limit.rlim_max == Self.unlimited ? rlim_t(needed) : min(limit.rlim_max, rlim_t(needed))
            var raised = limit
            raised.rlim_cur = target
            if setrlimit(Int32(RLIMIT_NOFILE.rawValue), &raised) == 0 { limit = raised }
        }
        return limit.rlim_cur == Self.unlimited ? Int.max : Int(clamping: limit.rlim_cur)
    }

    /// Raises the limit until `connections` fit; throws naming `ingest.max_connections` when the hard
    /// limit is too low. A push listener that silently held fewer connections than configured would
    /// refuse senders the operator promised to serve.
    static func ensure(connections: Int) throws(AgentStartError) {
        let limit = raise(toHold: connections)
        guard limit - reserve < connections else { return }
        throw AgentStartError("'ingest.max_connections' is \(connections), which needs \(connections + reserve) open files, "
            + "but the open-file limit is \(limit): lower ingest.max_connections or raise the limit "
            + "(LimitNOFILE= in the systemd unit, ulimit -n)")
    }

    /// How many orders API connections fit beside `pushConnections`, having raised the limit as far
    /// as the hard limit allows: `requested` when they all fit, else what the limit leaves (as Redis
    /// does with `maxclients`). The defaults (10,240 API connections) must not stop an agent from
    /// starting on a machine whose hard limit is 4,096; a connection over the reduced share is
    /// handled as one over the configured limit. Throws when not even one fits.
    static func share(requested: Int, beside pushConnections: Int) throws(AgentStartError) -> Int {
        let limit = raise(toHold: pushConnections > Int(Int32.max) - requested ? Int(Int32.max) : pushConnections + requested)
        let room = limit - reserve - pushConnections
        if room >= requested { return requested }
        guard room >= 1 else {
            throw AgentStartError("'api.max_connections' is \(requested), but the open-file limit is \(limit), which leaves no "
                + "descriptor for the orders API beside ingest.max_connections (\(pushConnections)) and \(reserve) for the agent: "
                + "raise the limit (LimitNOFILE= in the systemd unit, ulimit -n) or lower ingest.max_connections")
        }
        return room
    }
}
