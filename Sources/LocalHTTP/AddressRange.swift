#if canImport(Glibc)
import Glibc
#endif
public import NIOCore

/// One entry of `ingest.allow_from` / `api.allow_from`: an IPv4 or IPv6 network in CIDR form
/// (`10.0.0.0/8`, `fd00::/8`) or one address (`192.0.2.7`, `::1`). An IPv4 peer that reaches an
/// IPv6 socket as `::ffff:a.b.c.d` is matched as the IPv4 address it is.
public struct AddressRange: Sendable, Hashable, CustomStringConvertible {
    /// The network's address bytes (4 or 16), host bits cleared.
    let network: [UInt8]
    /// The prefix length in bits.
    let prefix: Int

    /// Parses `text`; nil when it is not an address or a network in CIDR form.
    public init?(_ text: String) {
        let parts = text.trimmingCharactersInSet().split(separator: "/", omittingEmptySubsequences: false)
        guard (1...2).contains(parts.count), let bytes = Self.bytes(of: String(parts[0])) else { return nil }
        let bits = bytes.count * 8
        var prefix = bits
        if parts.count == 2 {
            // At most three digits: no number from the file reaches arithmetic unchecked.
            guard parts[1].count <= 3, parts[1].allSatisfy(\.isASCII), let length = Int(parts[1]), (0...bits).contains(length)
            else { return nil }
            prefix = length
        }
        self.prefix = prefix
        network = Self.masked(bytes, prefix: prefix)
    }

    /// Whether `address` is inside this range.
    public func contains(_ address: SocketAddress) -> Bool {
        guard var bytes = Self.bytes(of: address) else { return false }
        if bytes.count == 16, network.count == 4, bytes.prefix(12) == [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF] {
            bytes = Array(bytes.suffix(4))
        }
        guard bytes.count == network.count else { return false }
        return Self.masked(bytes, prefix: prefix) == network
    }

    public var description: String {
        var text = [UInt8](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        let family = network.count == 4 ? AF_INET : AF_INET6
        let shown = network.withUnsafeBytes { raw in
            text.withUnsafeMutableBufferPointer { out in
                inet_ntop(family, raw.baseAddress, out.baseAddress, socklen_t(out.count)) != nil
            }
        }
        let address = shown ? String(decoding: text.prefix { $0 != 0 }, as: UTF8.self) : "?"
        return "\(address)/\(prefix)"
    }

    /// Parses a comma-separated list (empty entries skipped); fails on the first entry that is not a range.
    public static func list(_ text: String) -> Result<[AddressRange], InvalidEntry> {
        var ranges: [AddressRange] = []
        for entry in text.split(separator: ",") {
            let trimmed = String(entry).trimmingCharactersInSet()
            if trimmed.isEmpty { continue }
            guard let range = AddressRange(trimmed) else { return .failure(InvalidEntry(entry: trimmed)) }
            ranges.append(range)
        }
        return .success(ranges)
    }

    /// An entry of an allow list that is not an address or a CIDR network.
    public struct InvalidEntry: Error, Sendable {
        /// The entry as written.
        public let entry: String
    }

    private static func bytes(of text: String) -> [UInt8]? {
        var host = text
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        var v4 = in_addr()
        if inet_pton(AF_INET, host, &v4) == 1 { return withUnsafeBytes(of: &v4) { Array($0) } }
        var v6 = in6_addr()
        if inet_pton(AF_INET6, host, &v6) == 1 { return withUnsafeBytes(of: &v6) { Array($0) } }
        return nil
    }

    private static func bytes(of address: SocketAddress) -> [UInt8]? {
        // The peer's address as NIO prints it, read back as bytes: NIO's own `sockaddr_in*` fields
        // come from its C shim module, which this package does not depend on.
        address.ipAddress.flatMap { bytes(of: $0) }
    }

    private static func masked(_ bytes: [UInt8], prefix: Int) -> [UInt8] {
        bytes.enumerated().map { index, byte in
            let kept = min(8, max(0, prefix - index * 8))
            return kept == 8 ? byte : (kept == 0 ? 0 : byte & UInt8(truncatingIfNeeded: 0xFF << (8 - kept)))
        }
    }
}

extension StringProtocol {
    /// Without leading and trailing spaces and tabs (no Foundation in this module).
    func trimmingCharactersInSet() -> String {
        String(drop { $0 == " " || $0 == "\t" }.reversed().drop { $0 == " " || $0 == "\t" }.reversed())
    }
}
