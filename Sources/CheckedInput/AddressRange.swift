#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// An IPv4 or IPv6 network in CIDR form (`10.0.0.0/8`, `fd00::/8`) or one address (`192.0.2.7`,
/// `::1`): an entry of `ingest.allow_from` / `api.allow_from` or `webhooks.allow_private`. An IPv4
/// address seen as `::ffff:a.b.c.d` (an IPv4 peer on an IPv6 socket) is matched as the IPv4 address it is.
public struct AddressRange: Sendable, Hashable, CustomStringConvertible {
    /// The network's address bytes (4 or 16), host bits cleared.
    public let network: [UInt8]
    /// The prefix length in bits.
    public let prefix: Int

    /// Parses `text`; nil when it is not an address or a network in CIDR form.
    public init?(_ text: String) {
        let parts = Self.trimmed(text).split(separator: "/", omittingEmptySubsequences: false)
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

    /// Whether the address of these bytes (4 or 16) is inside this range.
    public func contains(bytes address: [UInt8]) -> Bool {
        var bytes = address
        if bytes.count == 16, network.count == 4, bytes.prefix(12) == [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF] {
            bytes = Array(bytes.suffix(4))
        }
        guard bytes.count == network.count else { return false }
        return Self.masked(bytes, prefix: prefix) == network
    }

    public var description: String { "\(Self.text(network))/\(prefix)" }

    /// Parses a comma-separated list (empty entries skipped); fails on the first entry that is not a range.
    public static func list(_ text: String) -> Result<[AddressRange], InvalidEntry> {
        var ranges: [AddressRange] = []
        for entry in text.split(separator: ",") {
            let trimmed = Self.trimmed(entry)
            if trimmed.isEmpty { continue }
            guard let range = AddressRange(trimmed) else { return .failure(InvalidEntry(entry: trimmed)) }
            ranges.append(range)
        }
        return .success(ranges)
    }

    /// An entry of a list that is not an address or a CIDR network.
    public struct InvalidEntry: Error, Sendable {
        /// The entry as written.
        public let entry: String
    }

    /// The bytes of an address written as text (an IPv6 one may be in brackets); nil when it is not one.
    public static func bytes(of text: String) -> [UInt8]? {
        var host = text
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        var v4 = in_addr()
        if inet_pton(AF_INET, host, &v4) == 1 { return withUnsafeBytes(of: &v4) { Array($0) } }
        var v6 = in6_addr()
        if inet_pton(AF_INET6, host, &v6) == 1 { return withUnsafeBytes(of: &v6) { Array($0) } }
        return nil
    }

    /// An address (4 or 16 bytes) as text: `169.254.169.254`, `fe80::1`.
    public static func text(_ address: [UInt8]) -> String {
        var text = [UInt8](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        let family = address.count == 4 ? AF_INET : AF_INET6
        let shown = address.withUnsafeBytes { raw in
            text.withUnsafeMutableBufferPointer { out in
                inet_ntop(family, raw.baseAddress, out.baseAddress, socklen_t(out.count)) != nil
            }
        }
        return shown ? String(decoding: text.prefix { $0 != 0 }, as: UTF8.self) : "?"
    }

    private static func masked(_ bytes: [UInt8], prefix: Int) -> [UInt8] {
        bytes.enumerated().map { index, byte in
            let kept = min(8, max(0, prefix - index * 8))
            return kept == 8 ? byte : (kept == 0 ? 0 : byte & UInt8(truncatingIfNeeded: 0xFF << (8 - kept)))
        }
    }

    /// Without leading and trailing spaces and tabs (no Foundation in this module).
    private static func trimmed(_ text: some StringProtocol) -> String {
        String(text.drop { $0 == " " || $0 == "\t" }.reversed().drop { $0 == " " || $0 == "\t" }.reversed())
    }
}
