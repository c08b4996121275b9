/// The three line endings an event stream may use (SSE-RULES: LF, CR and CRLF all end a line), for
/// servers and tests that write streams.
public enum LineEnding: String, Sendable, CaseIterable {
    /// `\n`
    case lf
    /// `\r`
    case cr
    /// `\r\n`
    case crlf

    /// Rewrites each LF of `text` in this style.
    public func apply(_ text: String) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(text.utf8.count)
        for byte in text.utf8 {
            guard byte == 0x0A else {
                bytes.append(byte)
                continue
            }
            switch self {
            case .lf: bytes.append(0x0A)
            case .cr: bytes.append(0x0D)
            case .crlf: bytes.append(contentsOf: [0x0D, 0x0A])
            }
        }
        return bytes
    }
}
