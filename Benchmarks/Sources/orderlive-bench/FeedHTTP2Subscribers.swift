import NIOCore
import NIOHPACK
import NIOHTTP2

/// One HTTP/2 connection's subscribers, decoded at the connection: swift-nio-http2's handler with no
/// stream multiplexer in front of this one, so a stream costs the load generator no child channel,
/// no pipeline and no HTTP/1 translation — a DATA frame's bytes go straight to the stream's
/// ``FeedBodyScanner``. It keeps the receive windows a browser announces topped up itself (without
/// the multiplexer nobody else does): 6 MiB per stream, 15 MiB for the connection, each given back
/// once half is used. It runs on the connection's event loop only.
final class FeedHTTP2ConnectionHandler: ChannelInboundHandler {
    typealias InboundIn = HTTP2Frame
    typealias OutboundOut = HTTP2Frame

    static let streamWindow = 6 * 1_024 * 1_024
    static let connectionWindow = 15 * 1_024 * 1_024

    private let shard: FeedShard
    /// Each open stream's scanner, and the bytes it received since its window was last given back.
    private var streams: [HTTP2StreamID: (scanner: FeedBodyScanner, unacknowledged: Int)] = [:]
    private var connectionUnacknowledged = 0
    private var nextStreamID = 1

    init(shard: FeedShard) {
        self.shard = shard
    }

    /// The settings to start the connection with: a browser's stream window.
    static var settings: HTTP2Settings { nioDefaultSettings + [HTTP2Setting(parameter: .initialWindowSize, value: streamWindow)] }

    func channelActive(context: ChannelHandlerContext) {
        // The connection window starts at 65,535 whatever the settings say; only WINDOW_UPDATE grows it.
        context.writeAndFlush(wrapOutboundOut(HTTP2Frame(
            streamID: .rootStream, payload: .windowUpdate(windowSizeIncrement: Self.connectionWindow - 65_535))), promise: nil)
        context.fireChannelActive()
    }

    /// Opens one subscriber's stream: `GET` the feed, as `FeedClientRequests` says.
    func open(context: ChannelHandlerContext) {
        let (uri, token) = FeedClientRequests.next()
        var headers: HPACKHeaders = [
            ":method": "GET", ":scheme": "http", ":path": uri, ":authority": "127.0.0.1", "accept": "text/event-stream",
        ]
        if let token { headers.add(name: "authorization", value: "Bearer \(token)") }
        let stream = HTTP2StreamID(nextStreamID)
        nextStreamID += 2
        streams[stream] = (FeedBodyScanner(), 0)
        context.writeAndFlush(wrapOutboundOut(HTTP2Frame(
            streamID: stream, payload: .headers(.init(headers: headers, endStream: true)))), promise: nil)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        switch frame.payload {
        case .data(let payload):
            guard case .byteBuffer(let buffer) = payload.data else { return }
            streams[frame.streamID]?.scanner.scan(buffer, into: shard)
            giveBack(buffer.readableBytes, on: frame.streamID, context: context)
            if payload.endStream { end(frame.streamID) }
        case .headers(let headers):
            if headers.endStream { end(frame.streamID) }
        case .rstStream:
            end(frame.streamID)
        default:
            break
        }
    }

    /// Returns the window used once half of it is, for the stream and for the connection.
    private func giveBack(_ bytes: Int, on stream: HTTP2StreamID, context: ChannelHandlerContext) {
        connectionUnacknowledged += bytes
        if connectionUnacknowledged >= Self.connectionWindow / 2 {
            context.write(wrapOutboundOut(HTTP2Frame(
                streamID: .rootStream, payload: .windowUpdate(windowSizeIncrement: connectionUnacknowledged))), promise: nil)
            connectionUnacknowledged = 0
            context.flush()
        }
        guard let used = streams[stream].map({ $0.unacknowledged + bytes }) else { return }
        if used >= Self.streamWindow / 2 {
            context.writeAndFlush(wrapOutboundOut(HTTP2Frame(streamID: stream, payload: .windowUpdate(windowSizeIncrement: used))),
                                  promise: nil)
            streams[stream]?.unacknowledged = 0
        } else {
            streams[stream]?.unacknowledged = used
        }
    }

    private func end(_ stream: HTTP2StreamID) {
        guard let ended = streams.removeValue(forKey: stream) else { return }
        shard.ended(overflow: ended.scanner.sawOverflow)
    }

    func channelInactive(context: ChannelHandlerContext) {
        for stream in Array(streams.keys) { end(stream) }
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }
}
