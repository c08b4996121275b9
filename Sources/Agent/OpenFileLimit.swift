#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The process's open-file limit (`RLIMIT_NOFILE`), raised at start-up so that
/// `ingest.max_connections` can really be held: each connection is a file descriptor, and running
/// out of them would stop the listener accepting anyone, the supervisor's health checks included.
enum OpenFileLimit {
    /// Descriptors kept for everything but push connections: the database, the stream, curl, logs.
    static let reserve = 128
    /// `RLIM_INFINITY` (all bits set on Linux; the C macro does not import into Swift).
    static let unlimited = rlim_t.max

    /// Raises the soft limit toward the hard limit until `needed` descriptors fit; throws naming
    /// `ingest.max_connections` when the hard limit is too low.
    static func ensure(connections: Int, setting: String = "ingest.max_connections") throws(AgentStartError) {
        let needed = connections > Int(Int32.max) - reserve ? Int(Int32.max) : connections + reserve
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return }
        if limit.rlim_cur != Self.unlimited, limit.rlim_cur < rlim_t(needed) {
            let target = limit.rlim_max == Self.unlimited ? rlim_t(needed) : min(limit.rlim_max, rlim_t(needed))
            var raised = limit
            raised.rlim_cur = target
            if setrlimit(Int32(RLIMIT_NOFILE.rawValue), &raised) == 0 { limit = raised }
        }
        guard limit.rlim_cur == Self.unlimited || limit.rlim_cur >= rlim_t(needed) else {
            throw AgentStartError("'\(setting)' is \(connections), which needs \(needed) open files, "
                + "but the open-file limit is \(limit.rlim_cur): lower \(setting) or raise the limit "
                + "(LimitNOFILE= in the systemd unit, ulimit -n)")
        }
    }
}
