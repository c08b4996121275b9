import AsyncSignals
import CoreMetrics
import LocalHTTP
import NIOCore
import NIOEmbedded
import SQLiteStore
import StoreModel
@testable import OrdersAPI
import Testing
import TestHarnesses
import TestKit

/// A feed connection's heartbeat on an embedded channel, its clock driven by the test (STYLE: a
/// handler is tested on an `EmbeddedChannel`): a comment exactly one interval after the last write of
/// any kind, again and again while idle, never after the stream's end.
@Suite(.timeLimit(.minutes(3))) struct FeedHeartbeatTests {
    let temporary: TemporaryStore
    let channel = EmbeddedChannel()

    init() throws {
        temporary = try TemporaryStore()
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).wait()
    }

    func attach(chunked: Bool) throws -> FeedSubscriber {
        let hub = ChangeHub(
            configuration: .init(heartbeat: .seconds(15)), store: temporary.store, wake: WakeSignal(),
            metrics: FeedMetrics(factory: NOOPMetricsHandler.instance), logger: quietLogger)
        let subscriber = FeedSubscriber(filter: OrderFilter(), capacity: 16, channel: channel, hub: hub)
        try channel.pipeline.syncOperations.addHandler(
            FeedConnectionHandler(subscriber, framing: chunked ? .chunked : .unframed, heartbeat: .seconds(15)), position: .first)
        return subscriber
    }

    func written() throws -> String? {
        var text: String?
        while let buffer = try channel.readOutbound(as: ByteBuffer.self) {
            text = (text ?? "") + String(buffer: buffer)
        }
        return text
    }

    @Test func anIdleFeedGetsOneEveryIntervalAndAWriteMovesTheNext() throws {
        let subscriber = try attach(chunked: true)
        let loop = channel.embeddedEventLoop
        loop.advanceTime(by: .seconds(14))
        #expect(try written() == nil)
        loop.advanceTime(by: .seconds(1))
        #expect(try written() == "d\r\n: heartbeat\n\n\r\n")
        // The heartbeat it wrote does not count as traffic that makes the next one unnecessary.
        loop.advanceTime(by: .seconds(15))
        #expect(try written() == "d\r\n: heartbeat\n\n\r\n")
        // Anything written (a change, the snapshot) moves the next one to an interval after it.
        loop.advanceTime(by: .seconds(5))
        channel.writeAndFlush(ByteBuffer(string: "event"), promise: nil)
        #expect(try written() == "event")
        loop.advanceTime(by: .seconds(10))
        #expect(try written() == nil, "15 s after the last heartbeat, but only 10 s after the last write")
        loop.advanceTime(by: .seconds(5))
        #expect(try written() == "d\r\n: heartbeat\n\n\r\n")
        // Once the stream has ended, nothing more.
        subscriber.end(.closed)
        loop.advanceTime(by: .seconds(60))
        #expect(try written() == nil)
    }

    @Test func anHTTP10FeedsHeartbeatIsTheCommentAlone() throws {
        _ = try attach(chunked: false)
        channel.embeddedEventLoop.advanceTime(by: .seconds(15))
        #expect(try written() == ": heartbeat\n\n")
    }
}
