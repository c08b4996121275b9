/// How a listener serves HTTP/2 (DESIGN §14): always `h2` by ALPN on TLS; without TLS, `h2c` by
/// prior knowledge when `cleartext` (`*.http2_cleartext`). HTTP/1.x is served on the same port
/// either way.
public struct ListenerHTTP2: Sendable, Hashable {
    /// Whether a cleartext connection that opens with HTTP/2's preface is served as `h2c`.
    public var cleartext: Bool
    /// The most streams open at once on one HTTP/2 connection (`SETTINGS_MAX_CONCURRENT_STREAMS`,
    /// `*.max_streams_per_connection`); more are refused with `REFUSED_STREAM`.
    public var maximumStreamsPerConnection: Int

    /// `h2c` off, 100 streams per connection.
    public init(cleartext: Bool = false, maximumStreamsPerConnection: Int = 100) {
        self.cleartext = cleartext
        self.maximumStreamsPerConnection = maximumStreamsPerConnection
    }
}
