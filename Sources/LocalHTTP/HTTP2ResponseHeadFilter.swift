import HTTPTypes
import NIOCore
import NIOHTTPTypes

/// On an HTTP/2 stream, takes the connection-specific fields out of a response head (RFC 9113
/// §8.2.2: `Connection`, `Keep-Alive`, `Proxy-Connection`, `Transfer-Encoding`, `Upgrade`), which
/// the handlers shared with HTTP/1 may set — `Connection: close` after an oversized body, say — and
/// which an HTTP/2 peer must treat as malformed. ``RequestBoundsHandler`` behind it has already seen
/// them, so `Connection: close` still ends the stream once answered. On the stream's event loop only.
final class HTTP2ResponseHeadFilter: ChannelOutboundHandler, RemovableChannelHandler {
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    private static let connectionSpecific: [HTTPField.Name] = [
        .connection, .transferEncoding, .upgrade,
    ] + ["Keep-Alive", "Proxy-Connection"].compactMap { HTTPField.Name($0) }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        guard case .head(var head) = unwrapOutboundIn(data),
              Self.connectionSpecific.contains(where: { head.headerFields[$0] != nil }) else {
            return context.write(data, promise: promise)
        }
        for name in Self.connectionSpecific { head.headerFields[name] = nil }
        context.write(wrapOutboundOut(.head(head)), promise: promise)
    }
}
