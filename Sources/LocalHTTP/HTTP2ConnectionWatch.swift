import CoreMetrics
import HummingbirdCore
import NIOCore
import NIOHPACK
import NIOHTTP2

/// Behind swift-nio-http2's handler on an HTTP/2 connection: what ``RequestBoundsHandler`` and
/// ``ConnectionAdmission`` do for an HTTP/1 connection, counted in streams.
///
/// - A connection with no open stream is evictable and must open one within the read timeout of its
///   start (`head_timeout`: it sent the preface and no complete request head) or of its last stream's
///   end (`idle_timeout`); while any stream is open it is busy.
/// - A connection error swift-nio-http2 answers with a GOAWAY (its rate limits for resets, control
///   frames and glitches, an oversized header block, a malformed frame) closes the connection and is
///   counted by its reason (``ConnectionClosure``). A stream error resets that stream only.
/// - A client that closes its side of the connection is gone: the connection closes, and with it
///   every stream (a feed frees its subscriber's place at once).
/// - A graceful stop (`ChannelShouldQuiesceEvent`) sends a GOAWAY, tells every open stream (so a
///   feed writes its end), and closes the connection when the last stream ends.
/// It runs on the connection's event loop only; its delegates are called there.
final class HTTP2ConnectionWatch: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTP2Frame
    typealias OutboundOut = HTTP2Frame

    /// Notes the GOAWAY frames swift-nio-http2 writes: one with an error code marks a connection error.
    final class Frames: NIOHTTP2FrameDelegate {
        var connectionError: HTTP2ErrorCode?
        func wroteFrame(_ frame: HTTP2Frame) {
            if case .goAway(_, let code, _) = frame.payload, code != .noError { connectionError = code }
        }
    }

    /// Hears streams open and close, on the connection's event loop.
    struct Streams: NIOHTTP2StreamDelegate {
        let watch: NIOLoopBound<HTTP2ConnectionWatch>
        func streamCreated(_ id: HTTP2StreamID, channel: any Channel) { watch.value.opened(id, channel) }
        func streamClosed(_ id: HTTP2StreamID, channel: any Channel) { watch.value.closed(id) }
    }

    let frames = Frames()
    private let admission: ConnectionAdmission?
    private let deadline: TimeAmount
    private let streamsOpened: Counter?
    private var context: ChannelHandlerContext?
    private var open: [HTTP2StreamID: any Channel] = [:]
    private var highest = HTTP2StreamID.rootStream
    private var timer: Scheduled<Void>?
    private var quiescing = false
    private var reported = false

    init(admission: ConnectionAdmission?, deadline: TimeAmount, streamsOpened: Counter? = nil) {
        self.admission = admission
        self.deadline = deadline
        self.streamsOpened = streamsOpened
    }

    /// swift-nio-http2's settings and limits for one connection of a listener.
    static func configuration(maximumStreams: Int, limits: HTTP1Channel.Configuration.DecoderConfiguration) -> NIOHTTP2Handler.Configuration {
        var configuration = NIOHTTP2Handler.Configuration()
        configuration.connection.initialSettings = [
            HTTP2Setting(parameter: .maxConcurrentStreams, value: max(1, maximumStreams)),
            HTTP2Setting(parameter: .maxHeaderListSize, value: limits.maxHeaderListSize),
        ]
        return configuration
    }

    func streamDelegate(on eventLoop: any EventLoop) -> Streams {
        Streams(watch: NIOLoopBound(self, eventLoop: eventLoop))
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        arm(.headTimeout)
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.context = nil
        timer?.cancel()
        timer = nil
    }

    func channelInactive(context: ChannelHandlerContext) {
        timer?.cancel()
        timer = nil
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        guard frames.connectionError != nil else { return }
        if !reported {
            reported = true
            admission?.report(Self.reason(for: error))
        }
        context.close(promise: nil)
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let event = event as? ChannelEvent, event == .inputClosed {
            // The listener allows half-closed connections (HTTP/1.1 may use them); HTTP/2 has no
            // such state: a client that closed its side is gone, and so are its streams (feeds).
            return context.close(promise: nil)
        }
        guard event is ChannelShouldQuiesceEvent else { return context.fireUserInboundEventTriggered(event) }
        guard !quiescing else { return }
        quiescing = true
        let goAway = HTTP2Frame(streamID: .rootStream, payload: .goAway(lastStreamID: highest, errorCode: .noError, opaqueData: nil))
        context.writeAndFlush(wrapOutboundOut(goAway), promise: nil)
        for stream in open.values { stream.pipeline.fireUserInboundEventTriggered(ChannelShouldQuiesceEvent()) }
        if open.isEmpty { context.close(promise: nil) }
    }

    private func opened(_ id: HTTP2StreamID, _ channel: any Channel) {
        open[id] = channel
        streamsOpened?.increment()
        if id > highest { highest = id }
        timer?.cancel()
        timer = nil
        if open.count == 1, let context { admission?.enter(.busy, context.channel) }
    }

    private func closed(_ id: HTTP2StreamID) {
        guard open.removeValue(forKey: id) != nil else { return }
        guard open.isEmpty, let context else { return }
        if quiescing { return context.close(promise: nil) }
        admission?.enter(.idle, context.channel)
        arm(.idleTimeout)
    }

    private func arm(_ reason: ConnectionClosure) {
        guard let context else { return }
        timer?.cancel()
        let channel = context.channel
        timer = context.eventLoop.assumeIsolated().scheduleTask(in: deadline) { [self] in
            timer = nil
            guard open.isEmpty else { return }
            admission?.report(reason)
            channel.close(promise: nil)
        }
    }

    /// The closure reason of a connection error.
    static func reason(for error: any Error) -> ConnectionClosure {
        switch error {
        case is NIOHTTP2Errors.ExcessiveRSTFrames, is NIOHTTP2Errors.ExcessiveStreamErrors:
            return .rapidReset
        case is NIOHTTP2Errors.ExcessiveControlFrames, is NIOHTTP2Errors.ExcessiveOutboundFrameBuffering,
            is NIOHTTP2Errors.ExcessiveEmptyDataFrames, is NIOHTTP2Errors.ExcessiveContinuationFrames,
            is NIOHTTP2Errors.ExcessiveNumberOfGlitches:
            return .frameFlood
        case is NIOHTTP2Errors.MaxStreamsViolation:
            return .streamLimit
        case is NIOHTTP2Errors.ExcessivelyLargeHeaderBlock, is NIOHPACKErrors.MaxHeaderListSizeViolation:
            return .oversizedHeaders
        default:
            return .protocolError
        }
    }
}
