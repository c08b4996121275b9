/// HTTP/2 frames written and read by hand (RFC 9113 §4.1, RFC 7541 for the few HPACK bytes needed):
/// what a test sends that no well-behaved client library would, and how it reads the server's
/// frames without a client stack in the way.
public enum HTTP2Wire {
    /// The client connection preface (RFC 9113 §3.4).
    public static let preface = Array("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8)

    /// One frame: 24-bit length, type, flags, 31-bit stream id, payload (RFC 9113 §4.1).
    public static func frame(_ type: UInt8, flags: UInt8 = 0, stream: UInt32 = 0, _ payload: [UInt8] = []) -> [UInt8] {
        let length = UInt32(payload.count)
        return [UInt8(truncatingIfNeeded: length >> 16), UInt8(truncatingIfNeeded: length >> 8), UInt8(truncatingIfNeeded: length),
                type, flags] + withUnsafeBytes(of: stream.bigEndian, Array.init) + payload
    }

    /// Frame types (RFC 9113 §6).
    public static let data: UInt8 = 0x0, headers: UInt8 = 0x1, rstStream: UInt8 = 0x3, settings: UInt8 = 0x4,
        goAway: UInt8 = 0x7, windowUpdate: UInt8 = 0x8, continuation: UInt8 = 0x9
    /// Flags: END_STREAM on DATA and HEADERS (ACK on SETTINGS and PING), END_HEADERS.
    public static let endStream: UInt8 = 0x1, endHeaders: UInt8 = 0x4

    /// A request head in HPACK: `:method` (GET by static index 2, POST by 3), `:scheme http` (6),
    /// `:path` (`/healthz`) and `:authority` as literals without indexing.
    public static func requestBlock(path: String = "/healthz", post: Bool = false) -> [UInt8] {
        let path = Array(path.utf8), authority = Array("127.0.0.1".utf8)
        return [post ? 0x83 : 0x82, 0x86, 0x04, UInt8(path.count)] + path + [0x01, UInt8(authority.count)] + authority
    }

    /// An HPACK integer with an `n`-bit prefix whose other bits are `flags` (RFC 7541 §5.1).
    public static func integer(_ value: Int, prefix n: Int, flags: UInt8 = 0) -> [UInt8] {
        let limit = (1 << n) - 1
        guard value >= limit else { return [flags | UInt8(value)] }
        var bytes: [UInt8] = [flags | UInt8(limit)]
        var rest = value - limit
        while rest >= 128 {
            bytes.append(UInt8(rest % 128) | 0x80)
            rest /= 128
        }
        return bytes + [UInt8(rest)]
    }

    /// The frames the server sent, as (type, flags, stream, payload).
    public static func frames(_ bytes: [UInt8]) -> [Frame] {
        var at = 0
        return frames(bytes, from: &at)
    }

    /// One frame as read: type, flags, stream id, payload.
    public typealias Frame = (type: UInt8, flags: UInt8, stream: UInt32, payload: [UInt8])

    /// The whole frames in `bytes` from `at`, leaving `at` at the first frame not yet whole: a reader
    /// of megabytes parses each byte once.
    public static func frames(_ bytes: [UInt8], from at: inout Int) -> [Frame] {
        var frames: [Frame] = []
        while bytes.count - at >= 9 {
            let length = Int(bytes[at]) << 16 | Int(bytes[at + 1]) << 8 | Int(bytes[at + 2])
            guard bytes.count - at - 9 >= length else { break }
            let stream = UInt32(bytes[at + 5] & 0x7f) << 24 | UInt32(bytes[at + 6]) << 16 | UInt32(bytes[at + 7]) << 8 | UInt32(bytes[at + 8])
            frames.append((bytes[at + 3], bytes[at + 4], stream, Array(bytes[(at + 9)..<(at + 9 + length)])))
            at += 9 + length
        }
        return frames
    }

    /// A 32-bit value, big-endian (SETTINGS values, WINDOW_UPDATE increments, error codes).
    public static func word(_ value: UInt32) -> [UInt8] { withUnsafeBytes(of: value.bigEndian, Array.init) }
}
