#if canImport(Glibc)
import Glibc
#endif

/// Whether an address can be listened on now: checked at start-up, so a port that is taken or an
/// address that is not this machine's stops `orderlive run` with a message naming the key, before
/// any service starts (Hummingbird only logs a failed bind at debug level).
public enum ListenCheck {
    /// Nil when `host:port` can be bound now; otherwise why not.
    public static func problem(host: String, port: Int) -> String? {
        guard (0...65_535).contains(port) else { return "the port is out of range" }
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV
        var found: UnsafeMutablePointer<addrinfo>?
        let resolved = getaddrinfo(host, String(port), &hints, &found)
        guard resolved == 0, let first = found else { return "the host cannot be resolved" }
        defer { freeaddrinfo(found) }
        let descriptor = socket(first.pointee.ai_family, first.pointee.ai_socktype, first.pointee.ai_protocol)
        guard descriptor >= 0 else { return "no socket can be opened" }
        defer { close(descriptor) }
        var reuse: Int32 = 1
        setsockopt(descriptor, SOL_SOCKET, SO_REUSEADDR, &reuse, socklen_t(MemoryLayout<Int32>.size))
        guard bind(descriptor, first.pointee.ai_addr, first.pointee.ai_addrlen) == 0 else {
            return errno == EADDRINUSE ? "the port is in use" : String(cString: strerror(errno))
        }
        return nil
    }
}
