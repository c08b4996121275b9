public import Foundation

/// Finding a free port failed at the named call.
public struct FreePortFailure: Error, CustomStringConvertible {
    public let description: String
}

/// A port on 127.0.0.1 that was free a moment ago (bound to port 0, read back, released): for a
/// server started in another process, or for two processes to race for.
public func freeLoopbackPort() throws -> Int {
    let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard descriptor >= 0 else { throw FreePortFailure(description: "socket() failed") }
    defer { close(descriptor) }
    guard bindLoopback(descriptor, port: 0) else { throw FreePortFailure(description: "bind() failed") }
    guard let port = boundPort(descriptor) else { throw FreePortFailure(description: "getsockname() failed") }
    return port
}

/// Whether a listener could bind 127.0.0.1:`port` now (with `SO_REUSEADDR`, as servers bind).
public func loopbackPortIsFree(_ port: Int) -> Bool {
    let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard descriptor >= 0 else { return false }
    defer { close(descriptor) }
    var one: Int32 = 1
    setsockopt(descriptor, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
    return bindLoopback(descriptor, port: port)
}

/// 127.0.0.1:`port` as a socket address.
public func loopbackAddress(port: Int) -> sockaddr_in {
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    address.sin_port = in_port_t(UInt16(clamping: port).bigEndian)
    return address
}

/// Binds `descriptor` to 127.0.0.1:`port` (0: any free port); true when it did.
public func bindLoopback(_ descriptor: Int32, port: Int) -> Bool {
    var address = loopbackAddress(port: port)
    return withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
    } == 0
}

/// The local port `descriptor` is bound to.
public func boundPort(_ descriptor: Int32) -> Int? {
    var address = sockaddr_in()
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let named = withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &length) }
    }
    return named == 0 ? Int(UInt16(bigEndian: address.sin_port)) : nil
}
