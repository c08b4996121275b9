import Foundation

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
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    address.sin_port = 0
    let bound = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
    }
    guard bound == 0 else { throw FreePortFailure(description: "bind() failed") }
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let named = withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &length) }
    }
    guard named == 0 else { throw FreePortFailure(description: "getsockname() failed") }
    return Int(UInt16(bigEndian: address.sin_port))
}
