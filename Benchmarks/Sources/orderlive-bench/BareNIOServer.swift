// The floor under Hummingbird (issue 39, item 2): the same answer as the bare Hummingbird reference —
// the body read, Gorush's 200 — from a NIO channel handler on the event loop, with no request task,
// no router and no async body sequence. Its rate next to the bare Hummingbird reference says what a
// push endpoint served by a NIO handler in front of the router could gain at most.

import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix

/// Reads each request's body and answers 200 with Gorush's success body, keep-alive, on the loop.
private final class BareAnswerHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    private static let answer = #"{"counts":1,"logs":[],"success":"ok"}"#
    private var bodyBytes = 0
    private var keepAlive = true

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            bodyBytes = 0
            keepAlive = head.isKeepAlive
        case .body(let buffer):
            bodyBytes += buffer.readableBytes
        case .end:
            guard bareAnswerDelay == .zero else {
                // A receiver that takes its time (BENCH_RECEIVER_DELAY_MS): the answer is written later
                // on the same loop, which meanwhile serves other connections.
                let bound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
                context.eventLoop.scheduleTask(in: bareAnswerDelay) { bound.value.0.answer(bound.value.1) }
                return
            }
            answer(context)
        }
    }

    private func answer(_ context: ChannelHandlerContext) {
            var headers = HTTPHeaders()
            headers.add(name: "Content-Type", value: "application/json")
            headers.add(name: "Content-Length", value: String(Self.answer.utf8.count))
            context.write(wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: .ok, headers: headers))), promise: nil)
            context.write(wrapOutboundOut(.body(.byteBuffer(context.channel.allocator.buffer(string: Self.answer)))), promise: nil)
            let keepAlive = self.keepAlive
            let bound = NIOLoopBound(context, eventLoop: context.eventLoop)
            context.writeAndFlush(wrapOutboundOut(.end(nil))).whenComplete { _ in
                if !keepAlive { bound.value.close(promise: nil) }
            }
    }
}

/// How long the bare server waits before each answer (`BENCH_RECEIVER_DELAY_MS`, default none).
let bareAnswerDelay = TimeAmount.milliseconds(Int64(ProcessInfo.processInfo.environment["BENCH_RECEIVER_DELAY_MS"] ?? "") ?? 0)

/// Runs the bare NIO server on a loopback port for the length of `body`, on `threads` event loops
/// (Hummingbird's default is one per core).
func withBareNIOServer<T: Sendable>(_ body: @Sendable @escaping (Int) async throws -> T) async throws -> T {
    let group = MultiThreadedEventLoopGroup(numberOfThreads: System.coreCount)
    let channel = try await ServerBootstrap(group: group)
        .serverChannelOption(.backlog, value: 256)
        .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
        .childChannelInitializer { channel in
            channel.eventLoop.makeCompletedFuture {
                try channel.pipeline.syncOperations.configureHTTPServerPipeline(withErrorHandling: true)
                try channel.pipeline.syncOperations.addHandler(BareAnswerHandler())
            }
        }
        .bind(host: "127.0.0.1", port: 0).get()
    let port = channel.localAddress?.port ?? 0
    do {
        let result = try await body(port)
        try await channel.close()
        try await group.shutdownGracefully()
        return result
    } catch {
        try? await channel.close()
        try? await group.shutdownGracefully()
        throw error
    }
}
