import Agent
import Foundation
import Logging
import NIOCore
import NIOHTTP1
import NIOHTTP2
import NIOPosix
import SQLiteStore
import StoreModel
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

// The change-feed benchmark's load generator: a process of its own, thousands of subscribers on NIO.

// MARK: The load generator (a process of its own)

/// What one event loop's subscribers have seen since the last reset. Each shard is touched by the
/// connections of one event loop, and by the reporting thread between phases, under its mutex.
struct FeedShardState {
    var deliveries = LatencyHistogram()
    var perChange: [Int64: (count: Int, latest: Int64)] = [:]
    var firstDelivery: Int64 = .max
    var lastDelivery: Int64 = 0
    var ready = 0
    var cutOff = 0
    var ended = 0
}

final class FeedShard: Sendable {
    let state = Mutex(FeedShardState())
}

/// One subscriber on a connection of its own: sends the request, decodes the chunked response and
/// hands the body's bytes to a ``FeedBodyScanner``. It runs on its channel's event loop only.
final class FeedSubscriberHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPClientResponsePart
    typealias OutboundOut = HTTPClientRequestPart

    private let shard: FeedShard
    private var scanner = FeedBodyScanner()

    init(shard: FeedShard) {
        self.shard = shard
    }

    func channelActive(context: ChannelHandlerContext) {
        let (uri, token) = FeedClientRequests.next()
        var head = HTTPRequestHead(version: .http1_1, method: .GET, uri: uri)
        head.headers.add(name: "Host", value: "127.0.0.1")
        if let token { head.headers.add(name: "Authorization", value: "Bearer \(token)") }
        head.headers.add(name: "Accept", value: "text/event-stream")
        context.write(wrapOutboundOut(.head(head)), promise: nil)
        context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
        context.fireChannelActive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head:
            break
        case .body(let buffer):
            scanner.scan(buffer, into: shard)
        case .end:
            context.close(promise: nil)
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        shard.ended(overflow: scanner.sawOverflow)
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }
}

/// Reads nothing, ever: the stalled subscriber. Its receive buffer is 4 KiB, so the agent's writes
/// stop soon; the agent must cut it off without slowing anyone else.
final class StalledSubscriberHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    func channelActive(context: ChannelHandlerContext) {
        let request = "GET /v1/orders/stream HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n\r\n"
        context.writeAndFlush(wrapOutboundOut(ByteBuffer(string: request)), promise: nil)
        context.fireChannelActive()
    }
}

/// What each subscriber asks for: by default the whole feed without a token; with
/// `BENCH_FEED_REQUESTS` naming a file of `URI<TAB>TOKEN` lines, subscriber N takes line N modulo
/// their count (the scope benchmark: each subscriber its own token).
enum FeedClientRequests {
    static let lines: [(uri: String, token: String?)] = {
        guard let path = ProcessInfo.processInfo.environment["BENCH_FEED_REQUESTS"],
              let text = try? String(contentsOfFile: path, encoding: .utf8) else { return [("/v1/orders/stream", nil)] }
        let lines = text.split(separator: "\n").map { line -> (String, String?) in
            let fields = line.split(separator: "\t", maxSplits: 1)
            return (String(fields[0]), fields.count > 1 ? String(fields[1]) : nil)
        }
        return lines.isEmpty ? [("/v1/orders/stream", nil)] : lines
    }()
    static let counter = Mutex(0)

    static func next() -> (uri: String, token: String?) {
        let index = counter.withLock { value in
            defer { value += 1 }
            return value
        }
        return lines[index % lines.count]
    }
}

/// Raises this process's soft open-file limit to its hard limit (the client holds one descriptor
/// per subscriber).
func raiseOpenFileLimit() {
    var limit = rlimit()
    guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return }
    limit.rlim_cur = limit.rlim_max
    _ = setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
}

/// One line to the driver, unbuffered (its standard output is a pipe).
func say(_ text: String) {
    FileHandle.standardOutput.write(Data((text + "\n").utf8))
}

/// `orderlive-bench feed-client PORT SUBSCRIBERS STALLED [H2CONNECTIONS]`: connects, prints `ready N
/// SECONDS` once every reading subscriber has its `ready`, then answers `reset` and `report` lines on
/// standard input with one JSON line each; `quit` (or the end of input) ends it. With H2CONNECTIONS
/// above 0 the subscribers are HTTP/2 streams (`h2c`, prior knowledge) spread over that many
/// connections, each stream's bytes scanned as an HTTP/1.1 subscriber's are, at the connection
/// (``FeedHTTP2ConnectionHandler``).
func feedClient(port: Int, subscribers: Int, stalled: Int, http2Connections: Int = 0) throws {
    raiseOpenFileLimit()
    let group = MultiThreadedEventLoopGroup(numberOfThreads: System.coreCount)
    var shards: [ObjectIdentifier: FeedShard] = [:]
    var loops = group.makeIterator()
    while let loop = loops.next() { shards[ObjectIdentifier(loop)] = FeedShard() }
    let allShards = Array(shards.values)
    let shardOf = shards
    let bootstrap = ClientBootstrap(group: group)
        .channelOption(.socketOption(.tcp_nodelay), value: 1)
        .channelInitializer { channel in
            guard let shard = shardOf[ObjectIdentifier(channel.eventLoop)] else {
                return channel.eventLoop.makeFailedFuture(ChannelError.inappropriateOperationForState)
            }
            return channel.eventLoop.makeCompletedFuture {
                try channel.pipeline.syncOperations.addHTTPClientHandlers()
                try channel.pipeline.syncOperations.addHandler(FeedSubscriberHandler(shard: shard))
            }
        }
    let stalledBootstrap = ClientBootstrap(group: group)
        .channelOption(.socketOption(.so_rcvbuf), value: 4_096)
        .channelOption(.autoRead, value: false)
        .channelInitializer { channel in
            channel.eventLoop.makeCompletedFuture { try channel.pipeline.syncOperations.addHandler(StalledSubscriberHandler()) }
        }
    var connections: [any Channel] = []
    for _ in 0..<max(0, http2Connections) {
        connections.append(try ClientBootstrap(group: group).channelOption(.socketOption(.tcp_nodelay), value: 1)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    guard let shard = shardOf[ObjectIdentifier(channel.eventLoop)] else { throw ChannelError.inappropriateOperationForState }
                    try channel.pipeline.syncOperations.addHandler(
                        NIOHTTP2Handler(mode: .client, initialSettings: FeedHTTP2ConnectionHandler.settings))
                    try channel.pipeline.syncOperations.addHandler(FeedHTTP2ConnectionHandler(shard: shard))
                }
            }
            .connect(host: "127.0.0.1", port: port).wait())
    }
    /// Opens subscriber `index`: a connection of its own, or a stream of one of the HTTP/2 connections
    /// (opened on that connection's event loop, where its handler lives).
    func subscribe(_ index: Int) throws -> (any Channel)? {
        guard !connections.isEmpty else { return try bootstrap.connect(host: "127.0.0.1", port: port).wait() }
        let connection = connections[index % connections.count]
        connection.eventLoop.execute {
            guard let context = try? connection.pipeline.syncOperations.context(handlerType: FeedHTTP2ConnectionHandler.self),
                  let handler = context.handler as? FeedHTTP2ConnectionHandler else { return }
            handler.open(context: context)
        }
        return nil
    }
    var held: [any Channel] = connections
    for _ in 0..<stalled {
        held.append(try stalledBootstrap.connect(host: "127.0.0.1", port: port).wait())
    }
    let started = monotonicNanoseconds()
    func readyCount() -> Int { allShards.reduce(0) { sum, shard in sum + shard.state.withLock { $0.ready } } }
    // At most 256 connections between connect and `ready`, so the listen backlog never overflows.
    var connected = 0
    while connected < subscribers {
        while connected < subscribers, connected - readyCount() < 256 {
            if let channel = try subscribe(connected) { held.append(channel) }
            connected += 1
        }
        usleep(1_000)
    }
    while readyCount() < subscribers { usleep(1_000) }
    say("ready \(readyCount()) \(format(Double(monotonicNanoseconds() - started) / 1e9, 2))")

    while let line = readLine() {
        let words = line.split(separator: " ")
        switch words.first {
        case "reset":
            for shard in allShards {
                shard.state.withLock { state in
                    state.deliveries = LatencyHistogram()
                    state.perChange = [:]
                    state.firstDelivery = .max
                    state.lastDelivery = 0
                }
            }
            say("ok")
        case "report":
            say(report(allShards, subscribers: subscribers))
        default:
            for channel in held { channel.close(promise: nil) }
            try group.syncShutdownGracefully()
            return
        }
        }
    for channel in held { channel.close(promise: nil) }
    try group.syncShutdownGracefully()
}

/// The `report` line: what every shard's subscribers saw since the last reset, as one JSON object.
func report(_ allShards: [FeedShard], subscribers: Int) -> String {
    var deliveries = LatencyHistogram()
    var perChange: [Int64: (count: Int, latest: Int64)] = [:]
    var first = Int64.max, last = Int64(0), cutOff = 0, ended = 0
    for shard in allShards {
        shard.state.withLock { state in
            deliveries.merge(state.deliveries)
            for (seq, value) in state.perChange {
                let previous = perChange[seq] ?? (0, 0)
                perChange[seq] = (previous.count + value.count, max(previous.latest, value.latest))
            }
            first = min(first, state.firstDelivery)
            last = max(last, state.lastDelivery)
            cutOff += state.cutOff
            ended += state.ended
        }
    }
    let open = subscribers - ended
    var toAll = LatencyHistogram()
    for (_, value) in perChange where value.count >= open { toAll.record(microseconds: value.latest / 1_000) }
    let seconds = last > first ? Double(last - first) / 1e9 : 0
    let fields: [String: Any] = [
        "deliveries": deliveries.total, "changes": perChange.count, "changes_to_all": toAll.total,
        "open": open, "cut_off": cutOff, "ended": ended,
        "deliveries_per_second": seconds > 0 ? Double(deliveries.total) / seconds : 0,
        "delivery_p50_ms": deliveries.milliseconds(at: 0.5), "delivery_p99_ms": deliveries.milliseconds(at: 0.99),
        "delivery_max_ms": Double(deliveries.maximum) / 1_000,
        "all_p50_ms": toAll.milliseconds(at: 0.5), "all_p99_ms": toAll.milliseconds(at: 0.99),
        "all_max_ms": Double(toAll.maximum) / 1_000,
        "client_rss_mb": residentMegabytes("VmRSS"),
    ]
    let data = (try? JSONSerialization.data(withJSONObject: fields, options: [.sortedKeys])) ?? Data()
    return String(decoding: data, as: UTF8.self)
}
