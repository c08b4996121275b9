public import CheckedInput
import CCurl

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Addresses a transfer may not connect to, checked on the address libcurl is about to connect to
/// (after name resolution, so a name that resolves there is caught too): link-local IPv4
/// (169.254.0.0/16, where clouds serve instance metadata and credentials) and IPv6 (fe80::/10), and
/// IPv4-mapped IPv6 forms of the former, unless a range in ``allowed`` holds the address. Loopback and
/// private ranges are not refused: a box's own programs are its main users.
public struct AddressGuard: Sendable, Hashable {
    /// Ranges let through although link-local.
    public var allowed: [AddressRange]
    /// What a refusal adds, telling the user how to allow it (a configuration key).
    public var hint: String

    /// A guard allowing `allowed`; `hint` ends the refusal's message.
    public init(allowed: [AddressRange] = [], hint: String = "") {
        self.allowed = allowed
        self.hint = hint
    }

    /// The ranges refused unless allowed.
    public static let refused: [AddressRange] = ["169.254.0.0/16", "fe80::/10"].compactMap { AddressRange($0) }

    /// True when `address` (4 or 16 bytes; an IPv4-mapped IPv6 one counts as its IPv4 address) may be reached.
    public func permits(_ address: [UInt8]) -> Bool {
        guard Self.refused.contains(where: { $0.contains(bytes: address) }) else { return true }
        return allowed.contains { $0.contains(bytes: address) }
    }

    /// The message of a refused connection to `address`.
    func refusal(_ address: String) -> String {
        "refused to connect to \(address): a link-local or cloud metadata address" + (hint.isEmpty ? "" : "; \(hint)")
    }

    /// The addresses `host` resolves to (or `host` itself when it is an address), for a check
    /// at the time an endpoint is added; empty when it does not resolve.
    public static func resolve(_ host: String) -> [[UInt8]] {
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        let bare = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
        guard getaddrinfo(bare, nil, &hints, &list) == 0, let list else { return [] }
        defer { freeaddrinfo(list) }
        var addresses: [[UInt8]] = []
        var entry: UnsafeMutablePointer<addrinfo>? = list
        while let current = entry {
            if let address = current.pointee.ai_addr, let bytes = Self.bytes(of: UnsafeRawPointer(address)) { addresses.append(bytes) }
            entry = current.pointee.ai_next
        }
        return addresses
    }

    /// The address bytes of a `sockaddr_in` or `sockaddr_in6`; nil for another family.
    static func bytes(of socketAddress: UnsafeRawPointer) -> [UInt8]? {
        switch Int32(socketAddress.load(as: sockaddr.self).sa_family) {
        case AF_INET:
            let address = socketAddress.load(as: sockaddr_in.self).sin_addr
            return withUnsafeBytes(of: address) { Array($0) }
        case AF_INET6:
            let address = socketAddress.load(as: sockaddr_in6.self).sin6_addr
            return withUnsafeBytes(of: address) { Array($0) }
        default:
            return nil
        }
    }
}

/// libcurl's open-socket callback for a transfer with an ``HTTPRequest/addressGuard``: refuses an
/// address the guard does not permit (the transfer then fails to connect, and names it), and otherwise
/// opens the socket as libcurl would, close-on-exec.
func curlOpenSocketCallback(
    _ context: UnsafeMutableRawPointer?, _ purpose: curlsocktype, _ address: UnsafeMutablePointer<curl_sockaddr>?
) -> curl_socket_t {
    guard let context, let address else { return orderlive_socket_bad() }
    let transfer = Unmanaged<Transfer>.fromOpaque(context).takeUnretainedValue()
    let family = address.pointee.family
    if let check = transfer.request.addressGuard, let offset = MemoryLayout<curl_sockaddr>.offset(of: \.addr) {
        let raw = UnsafeRawPointer(address).advanced(by: offset)
        if let bytes = AddressGuard.bytes(of: raw), !check.permits(bytes) {
            transfer.refusedAddress = AddressRange.text(bytes)
            return orderlive_socket_bad()
        }
    }
    return socket(family, address.pointee.socktype | Int32(SOCK_CLOEXEC.rawValue), address.pointee.protocol)
}
