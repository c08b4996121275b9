public import NIOCore
public import NIOHTTP1

/// Answers each request in the framing its HTTP version allows, and closes the connection when the
/// request asked for that (RFC 9112 §6.1, §9.3, §9.6):
///
/// - to an HTTP/1.0 request, an `HTTP/1.0` response: never `Transfer-Encoding: chunked`; a body of
///   unknown length (the change feed) is delimited by the connection's close, with `Connection: close`;
/// - an HTTP/1.0 request keeps its connection only when it asked with `Connection: keep-alive` and the
///   response has a `Content-Length` (then the response says `Connection: keep-alive`);
/// - an HTTP/1.1 request with `Connection: close` (any case, any position in the list) gets
///   `Connection: close` and the connection closes once the response is written.
///
/// It sits between NIO's HTTP/1 codec and the HTTP-types codec, on the channel's event loop only.
public final class HTTPVersionHandler: ChannelDuplexHandler, RemovableChannelHandler {
    public typealias InboundIn = HTTPServerRequestPart
    public typealias InboundOut = HTTPServerRequestPart
    public typealias OutboundIn = HTTPServerResponsePart
    public typealias OutboundOut = HTTPServerResponsePart

    private struct Asked {
        var version: HTTPVersion
        var keepAlive: Bool
        var chunkable: Bool { version.major > 1 || (version.major == 1 && version.minor >= 1) }
    }

    /// Requests read whose response head has not been written, oldest first (pipelining).
    private var unanswered: [Asked] = []
    /// The response being written ends the connection.
    private var closeAfterResponse = false

    /// Creates the handler.
    public init() {}

    /// Whether the next response head written (to the oldest request not yet answered) may use
    /// chunked framing: false for an HTTP/1.0 request, whose body must end with the connection.
    public var nextResponseIsChunkable: Bool { unanswered.first?.chunkable ?? true }

    public func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if case .head(let head) = unwrapInboundIn(data) {
            unanswered.append(Asked(version: head.version, keepAlive: head.isKeepAlive))
        }
        context.fireChannelRead(data)
    }

    public func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        switch unwrapOutboundIn(data) {
        case .head(var head):
            let code = head.status.code
            // An interim response (100 Continue) is followed by the final one to the same request.
            if code >= 100, code < 200, code != 101 {
                context.write(data, promise: promise)
                return
            }
            let asked = unanswered.isEmpty ? Asked(version: .http1_1, keepAlive: true) : unanswered.removeFirst()
            var close = !asked.keepAlive
            if !asked.chunkable {
                head.version = asked.version
                head.headers.remove(name: "transfer-encoding")
                if !head.headers.contains(name: "content-length"), head.status.mayHaveResponseBody { close = true }
            }
            if close {
                head.headers.replaceOrAdd(name: "connection", value: "close")
            } else if !asked.chunkable {
                head.headers.replaceOrAdd(name: "connection", value: "keep-alive")
            }
            closeAfterResponse = close
            context.write(wrapOutboundOut(.head(head)), promise: promise)
        case .body:
            context.write(data, promise: promise)
        case .end:
            guard closeAfterResponse else {
                context.write(data, promise: promise)
                return
            }
            closeAfterResponse = false
            // Closed once the end is on the wire: closing with writes pending would drop them.
            let written = context.eventLoop.makePromise(of: Void.self)
            written.futureResult.cascade(to: promise)
            let channel = context.channel
            written.futureResult.whenComplete { _ in channel.close(promise: nil) }
            context.writeAndFlush(data, promise: written)
        }
    }
}
