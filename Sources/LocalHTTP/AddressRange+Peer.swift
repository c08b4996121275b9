public import CheckedInput
public import NIOCore

/// A listener's allow list matched against a connecting peer.
extension AddressRange {
    /// Whether the peer `address` is inside this range.
    public func contains(_ address: SocketAddress) -> Bool {
        // The peer's address as NIO prints it, read back as bytes: NIO's own `sockaddr_in*` fields
        // come from its C shim module, which this package does not depend on.
        guard let bytes = address.ipAddress.flatMap({ Self.bytes(of: $0) }) else { return false }
        return contains(bytes: bytes)
    }
}
