import HTTPTypes
import Hummingbird
public import HummingbirdCore
public import Logging
public import NIOCore
import NIOHTTP1
public import NIOHTTPTypes
import NIOHTTPTypesHTTP1

/// The HTTP/1 child channel both listeners serve on: Hummingbird's `HTTP1Channel` pipeline with one
/// handler more, ``HTTPVersionHandler``, between NIO's HTTP/1 codec and the HTTP-types codec — the
/// only place where a request's HTTP version is still known (the HTTP-types request has none).
///
/// Hummingbird answers every request with an HTTP/1.1 head, so NIO frames a body of unknown length
/// with `Transfer-Encoding: chunked`, which an HTTP/1.0 client cannot read (RFC 9112 §6.1), and keeps
/// the connection open after an HTTP/1.0 response. ``HTTPVersionHandler`` fixes both.
public struct HTTP1Listener: ServerChildChannel, HTTPChannelHandler {
    public typealias Value = NIOAsyncChannel<HTTPRequestPart, HTTPResponsePart>

    public let responder: HTTPChannelHandler.Responder
    private let front: @Sendable () -> [any ChannelHandler]
    private let handlers: @Sendable () -> [any RemovableChannelHandler]
    private let limits: HTTP1Channel.Configuration.DecoderConfiguration

    /// Creates the child channel: `front` (made anew per connection) sit first, on the socket's side
    /// of everything (admission, then TLS); `handlers` sit after the HTTP-types codec, as
    /// Hummingbird's `additionalChannelHandlers` do; `limits` bound the request head.
    public init(
        responder: @escaping HTTPChannelHandler.Responder, limits: HTTP1Channel.Configuration.DecoderConfiguration,
        front: @escaping @Sendable () -> [any ChannelHandler] = { [] },
        handlers: @escaping @Sendable () -> [any RemovableChannelHandler]
    ) {
        self.responder = responder
        self.limits = limits
        self.front = front
        self.handlers = handlers
    }

    /// The server builder for `Application(server:)`.
    public static func builder(
        limits: HTTP1Channel.Configuration.DecoderConfiguration,
        front: @escaping @Sendable () -> [any ChannelHandler] = { [] },
        handlers: @escaping @Sendable () -> [any RemovableChannelHandler] = { [] }
    ) -> HTTPServerBuilder {
        HTTPServerBuilder { responder in HTTP1Listener(responder: responder, limits: limits, front: front, handlers: handlers) }
    }

    public func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        channel.eventLoop.makeCompletedFuture {
            var decoderLimits = NIOHTTPDecoderLimitConfiguration()
            decoderLimits.maxHeaderFieldSize = limits.maxHeaderFieldSize
            decoderLimits.maxHeaderListSize = limits.maxHeaderListSize
            decoderLimits.maxHeaderFieldCount = limits.maxHeaderFieldCount
            try channel.pipeline.syncOperations.addHandlers(front())
            // As Hummingbird's HTTP1Channel sets it up, with the version handler added.
            try channel.pipeline.syncOperations.configureHTTPServerPipeline(
                withPipeliningAssistance: false, withErrorHandling: false, withOutboundHeaderValidation: false,
                withEncoderConfiguration: .init(), withDecoderLimitConfiguration: decoderLimits)
            try channel.pipeline.syncOperations.addHandler(HTTPVersionHandler())
            try channel.pipeline.syncOperations.addHandler(HTTP1ToHTTPServerCodec(secure: false))
            try channel.pipeline.syncOperations.addHandlers(handlers())
            try channel.pipeline.syncOperations.addHandler(HTTPConnectionStateHandler(idleTimeout: nil, logger: logger))
            return try NIOAsyncChannel(
                wrappingChannelSynchronously: channel, configuration: .init(isOutboundHalfClosureEnabled: true))
        }
    }

    public func handle(value: Value, logger: Logger) async {
        await handleHTTP(asyncChannel: value, logger: logger)
    }
}

extension HTTP1Listener {
    /// Where a handler that writes a response's bytes itself (the change feed's) goes in a
    /// connection's pipeline: just before NIO's HTTP encoder, so its writes skip the encoder but still
    /// pass TLS; first when the pipeline has no encoder (a test's embedded channel).
    public static func rawWritePosition(in pipeline: ChannelPipeline.SynchronousOperations) -> ChannelPipeline.SynchronousOperations.Position {
        guard let encoder = try? pipeline.handler(type: HTTPResponseEncoder.self) else { return .first }
        return .before(encoder)
    }
}
