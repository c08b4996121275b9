import LocalHTTP
import NIOCore
import NIOEmbedded
import Testing

/// The flush coalescer beneath swift-nio-http2's handler, on an embedded channel: the flushes of one
/// event-loop turn reach the socket as one, after the turn; a close or an unwritable channel flushes
/// at once; nothing written is lost.
@Suite(.timeLimit(.minutes(1))) struct HTTP2FlushCoalescerTests {
    /// Counts the flushes and closes that reach the socket side, in order.
    final class SocketSide: ChannelOutboundHandler {
        typealias OutboundIn = IOData
        var events: [String] = []

        func flush(context: ChannelHandlerContext) {
            events.append("flush")
            context.flush()
        }

        func close(context: ChannelHandlerContext, mode: CloseMode, promise: EventLoopPromise<Void>?) {
            events.append("close")
            context.close(mode: mode, promise: promise)
        }
    }

    static func channel() throws -> (EmbeddedChannel, SocketSide) {
        let socket = SocketSide()
        let channel = EmbeddedChannel()
        try channel.pipeline.syncOperations.addHandler(socket)
        try channel.pipeline.syncOperations.addHandler(HTTP2FlushCoalescer())
        return (channel, socket)
    }

    static func written(_ channel: EmbeddedChannel) throws -> [String] {
        var texts: [String] = []
        while let buffer = try channel.readOutbound(as: ByteBuffer.self) { texts.append(String(buffer: buffer)) }
        return texts
    }

    @Test func flushesOfOneTurnBecomeOneAfterIt() throws {
        let (channel, socket) = try Self.channel()
        for stream in 1...100 {
            channel.writeAndFlush(ByteBuffer(string: "frame \(stream)"), promise: nil)
        }
        #expect(socket.events.isEmpty)
        #expect(try Self.written(channel).isEmpty)
        channel.embeddedEventLoop.run()
        #expect(socket.events == ["flush"])
        #expect(try Self.written(channel) == (1...100).map { "frame \($0)" })
        channel.writeAndFlush(ByteBuffer(string: "next turn"), promise: nil)
        channel.embeddedEventLoop.run()
        #expect(socket.events == ["flush", "flush"])
        #expect(try Self.written(channel) == ["next turn"])
    }

    @Test func aCloseFlushesWhatWasOwedFirst() throws {
        let (channel, socket) = try Self.channel()
        channel.writeAndFlush(ByteBuffer(string: "GOAWAY"), promise: nil)
        #expect(try Self.written(channel).isEmpty)
        _ = channel.close()
        #expect(socket.events == ["flush", "close"])
        #expect(try Self.written(channel) == ["GOAWAY"])
        channel.embeddedEventLoop.run()
        #expect(socket.events == ["flush", "close"])
    }

    @Test func anUnwritableChannelIsFlushedAtOnce() throws {
        let (channel, socket) = try Self.channel()
        channel.writeAndFlush(ByteBuffer(string: "owed"), promise: nil)
        channel.isWritable = false
        channel.write(ByteBuffer(string: "over the limit"), promise: nil)
        #expect(socket.events == ["flush"])
        #expect(try Self.written(channel) == ["owed", "over the limit"])
        channel.writeAndFlush(ByteBuffer(string: "while unwritable"), promise: nil)
        #expect(socket.events == ["flush", "flush"])
        #expect(try Self.written(channel) == ["while unwritable"])
        channel.embeddedEventLoop.run()
        #expect(socket.events == ["flush", "flush"])
    }

    static func limits(_ streams: Int) -> (low: Int, high: Int) {
        let mark = HTTP2FlushCoalescer.waterMark(maximumStreams: streams)
        return (mark.low, mark.high)
    }

    @Test func writeBufferLimitsGrowWithTheStreams() {
        #expect(Self.limits(1) == (32 << 10, 64 << 10))
        #expect(Self.limits(100) == (800 << 10, 1_600 << 10))
        #expect(Self.limits(100_000) == (2 << 20, 4 << 20))
        #expect(Self.limits(0) == (32 << 10, 64 << 10))
    }
}
