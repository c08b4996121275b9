import CoreMetrics
import HTTPTypes
import Hummingbird
public import HummingbirdCore
public import Logging
public import NIOCore
import NIOHTTP1
import NIOHTTP2
import NIOHTTPTypes
import NIOHTTPTypesHTTP1
import NIOHTTPTypesHTTP2
import NIOTLS

/// The child channel both listeners serve on: HTTP/1.x as Hummingbird's `HTTP1Channel` sets it up
/// (with ``HTTPVersionHandler`` added), and HTTP/2 through swift-nio-http2 — `h2` chosen by ALPN on
/// TLS, `h2c` by its preface when the listener allows cleartext HTTP/2 (``ProtocolChoiceHandler``).
/// Every HTTP/2 stream gets the same handlers as an HTTP/1 connection, so the routes, the feed and
/// the push endpoint see HTTP parts either way; ``HTTP2ConnectionWatch`` keeps the connection's
/// admission, deadlines and abuse limits.
///
/// Hummingbird answers every request with an HTTP/1.1 head, so NIO frames a body of unknown length
/// with `Transfer-Encoding: chunked`, which an HTTP/1.0 client cannot read (RFC 9112 §6.1), and keeps
/// the connection open after an HTTP/1.0 response. ``HTTPVersionHandler`` fixes both.
public struct HTTPListener: ServerChildChannel, HTTPChannelHandler {
    typealias HTTP1Connection = NIOAsyncChannel<HTTPRequestPart, HTTPResponsePart>
    typealias HTTP2Connection = NIOHTTP2Handler.AsyncStreamMultiplexer<HTTP1Connection>

    /// One connection, once its protocol is chosen.
    public struct Value: ServerChildChannelValue {
        let negotiated: EventLoopFuture<NIONegotiatedHTTPVersion<HTTP1Connection, HTTP2Connection>>
        public let channel: any Channel
    }

    /// What the channel needs beyond the responder.
    public struct Setup: Sendable {
        /// Request head limits.
        var limits: HTTP1Channel.Configuration.DecoderConfiguration
        /// Handlers made anew per connection, first on the socket's side (admission, then TLS).
        var front: @Sendable () -> [any ChannelHandler]
        /// Handlers made anew per connection or stream, after the HTTP-types codec (the listener's own).
        var handlers: @Sendable () -> [any RemovableChannelHandler]
        /// The largest request body and the read deadline (``RequestBoundsHandler``).
        var maximumBodyBytes: Int
        var readTimeout: TimeAmount
        /// The listener's admission: connections, their phases, the closures it counts.
        var admission: ConnectionAdmission?
        /// How the protocol is chosen.
        var choice: ProtocolChoiceHandler.Mode
        /// The most streams open at once on one HTTP/2 connection.
        var maximumStreams: Int
        /// Counts the HTTP/2 streams opened.
        var streamsOpened: Counter?
    }

    public let responder: HTTPChannelHandler.Responder
    private let setup: Setup

    init(responder: @escaping HTTPChannelHandler.Responder, setup: Setup) {
        self.responder = responder
        self.setup = setup
    }

    /// The server builder for `Application(server:)`.
    static func builder(_ setup: Setup) -> HTTPServerBuilder {
        HTTPServerBuilder { responder in HTTPListener(responder: responder, setup: setup) }
    }

    public func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        channel.eventLoop.makeCompletedFuture {
            let pipeline = channel.pipeline.syncOperations
            try pipeline.addHandlers(setup.front())
            if setup.choice == .http1 {
                let connection = try configureHTTP1(channel, logger: logger)
                return Value(negotiated: channel.eventLoop.makeSucceededFuture(.http1_1(connection)), channel: channel)
            }
            let negotiation = NIOTypedApplicationProtocolNegotiationHandler<NIONegotiatedHTTPVersion<HTTP1Connection, HTTP2Connection>> {
                result in
                channel.eventLoop.makeCompletedFuture {
                    switch result {
                    case .negotiated("h2"): return .http2(try configureHTTP2(channel, logger: logger))
                    case .negotiated("http/1.1"), .fallback: return .http1_1(try configureHTTP1(channel, logger: logger))
                    case .negotiated: throw NIOHTTP2Errors.invalidALPNToken()
                    }
                }
            }
            try pipeline.addHandler(
                ProtocolChoiceHandler(setup.choice, deadline: setup.readTimeout, admission: setup.admission))
            try pipeline.addHandler(negotiation)
            return Value(negotiated: negotiation.protocolNegotiationResult, channel: channel)
        }
    }

    public func handle(value: Value, logger: Logger) async {
        let connection: NIONegotiatedHTTPVersion<HTTP1Connection, HTTP2Connection>
        do {
            connection = try await value.negotiated.get()
        } catch {
            logger.trace("the connection closed before its protocol was chosen", metadata: ["error": "\(error)"])
            return
        }
        switch connection {
        case .http1_1(let http1):
            await handleHTTP(asyncChannel: http1, logger: logger)
        case .http2(let http2):
            do {
                try await withThrowingDiscardingTaskGroup { group in
                    for try await stream in http2.inbound {
                        group.addTask { await handleHTTP(asyncChannel: stream, logger: logger) }
                    }
                }
            } catch {
                logger.trace("an HTTP/2 connection ended with an error", metadata: ["error": "\(error)"])
            }
        }
    }

    /// The HTTP/1.x pipeline, as Hummingbird's HTTP1Channel sets it up, with the version handler added.
    private func configureHTTP1(_ channel: any Channel, logger: Logger) throws -> HTTP1Connection {
        var decoderLimits = NIOHTTPDecoderLimitConfiguration()
        decoderLimits.maxHeaderFieldSize = setup.limits.maxHeaderFieldSize
        decoderLimits.maxHeaderListSize = setup.limits.maxHeaderListSize
        decoderLimits.maxHeaderFieldCount = setup.limits.maxHeaderFieldCount
        let pipeline = channel.pipeline.syncOperations
        try pipeline.configureHTTPServerPipeline(
            withPipeliningAssistance: false, withErrorHandling: false, withOutboundHeaderValidation: false,
            withEncoderConfiguration: .init(), withDecoderLimitConfiguration: decoderLimits)
        try pipeline.addHandler(HTTPVersionHandler())
        try pipeline.addHandler(HTTP1ToHTTPServerCodec(secure: false))
        try pipeline.addHandler(
            RequestBoundsHandler(maximumBodyBytes: setup.maximumBodyBytes, readTimeout: setup.readTimeout, admission: setup.admission))
        try pipeline.addHandlers(setup.handlers())
        try pipeline.addHandler(HTTPConnectionStateHandler(idleTimeout: nil, logger: logger))
        return try NIOAsyncChannel(wrappingChannelSynchronously: channel, configuration: .init(isOutboundHalfClosureEnabled: true))
    }

    /// The HTTP/2 connection: swift-nio-http2's handler with the listener's limits, the flush
    /// coalescer before it, the watch behind it, and per stream the same handlers as an HTTP/1
    /// connection.
    private func configureHTTP2(_ channel: any Channel, logger: Logger) throws -> HTTP2Connection {
        let watch = HTTP2ConnectionWatch(admission: setup.admission, deadline: setup.readTimeout, streamsOpened: setup.streamsOpened)
        let (setup, logger) = (self.setup, logger)
        try channel.pipeline.syncOperations.addHandler(HTTP2FlushCoalescer())
        try channel.syncOptions?.setOption(.writeBufferWaterMark, value: HTTP2FlushCoalescer.waterMark(maximumStreams: setup.maximumStreams))
        let multiplexer = try channel.pipeline.syncOperations.configureAsyncHTTP2Pipeline(
            mode: .server, streamDelegate: watch.streamDelegate(on: channel.eventLoop), frameDelegate: watch.frames,
            configuration: HTTP2ConnectionWatch.configuration(maximumStreams: setup.maximumStreams, limits: setup.limits)
        ) { stream in
            stream.eventLoop.makeCompletedFuture {
                let pipeline = stream.pipeline.syncOperations
                try pipeline.addHandler(HTTP2StreamCloser(grace: setup.readTimeout))
                try pipeline.addHandler(HTTP2FramePayloadToHTTPServerCodec())
                try pipeline.addHandler(HTTP2ResponseHeadFilter())
                try pipeline.addHandler(RequestBoundsHandler(maximumBodyBytes: setup.maximumBodyBytes, readTimeout: setup.readTimeout))
                try pipeline.addHandlers(setup.handlers())
                try pipeline.addHandler(HTTPConnectionStateHandler(idleTimeout: nil, logger: logger))
                return try HTTP1Connection(wrappingChannelSynchronously: stream)
            }
        }
        try channel.pipeline.syncOperations.addHandler(watch)
        return multiplexer
    }
}
