public import NIOCore
import NIOHTTP1
import NIOHTTP2

/// How a handler that writes a response body's bytes itself (the change feed's) frames them, and
/// where in a connection's or stream's pipeline it goes so that its writes skip the HTTP encoder but
/// still pass TLS.
public enum RawBodyFraming: Sendable, Equatable {
    /// HTTP/1.1: each event a chunk (`Transfer-Encoding: chunked`).
    case chunked
    /// HTTP/1.0: the events as they are; the body ends with the connection (``HTTPVersionHandler``).
    case unframed
    /// An HTTP/2 stream: each event a DATA frame.
    case http2

    /// The framing of the response being written on `pipeline`, and where its raw writer goes: just
    /// before NIO's HTTP/1 encoder, first on an HTTP/2 stream (before the frame codec) or when the
    /// pipeline has no encoder (a test's embedded channel).
    public static func of(
        _ pipeline: ChannelPipeline.SynchronousOperations
    ) -> (framing: RawBodyFraming, position: ChannelPipeline.SynchronousOperations.Position) {
        if let encoder = try? pipeline.handler(type: HTTPResponseEncoder.self) {
            let version = try? pipeline.handler(type: HTTPVersionHandler.self)
            return (version?.nextResponseIsChunkable ?? true ? .chunked : .unframed, .before(encoder))
        }
        if (try? pipeline.handler(type: HTTP2ResponseHeadFilter.self)) != nil { return (.http2, .first) }
        return (.chunked, .first)
    }

    /// What to write for an event whose bytes are `event` and, chunk-framed, `chunk`.
    public func wrap(event: ByteBuffer, chunk: ByteBuffer) -> NIOAny {
        switch self {
        case .chunked: NIOAny(chunk)
        case .unframed: NIOAny(event)
        case .http2: NIOAny(HTTP2Frame.FramePayload.data(.init(data: .byteBuffer(event))))
        }
    }

    /// Whether the response ends with the connection (HTTP/1.0), not with a chunked body's end.
    public var endsWithConnection: Bool { self == .unframed }
}
