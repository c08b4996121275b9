import AsyncSignals
import CoreMetrics
import Foundation
import GRDB
import LocalHTTP
import NIOCore
import NIOHTTP1
import NIOHTTPTypes
import NIOHTTPTypesHTTP1
import NIOPosix
import SQLiteStore
@testable import PushIngest
import TestHarnesses
import TestKit
import Testing
import Prometheus

/// Issue 39: `POST /api/push` answered on the event loop by ``PushRequestHandler``, in front of the
/// router; every other request, and a push pipelined behind one, still goes to the router.
@Suite(.timeLimit(.minutes(3))) struct PushRequestHandlerTests {
    private static func push(_ orderID: Int) -> String {
        let body = #"{"notifications":[{"tokens":["t"],"platform":2,"content_available":true,"#
            + #""data":{"type":"order.created","order":{"id":\#(orderID),"status":"created","version":1}}}]}"#
        return "POST /api/push HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\n\r\n"
            + body
    }

    /// Where each of `markers` first appears in `text`, after the one before it.
    private static func inOrder(_ markers: [String], in text: String) -> Bool {
        var rest = text[...]
        for marker in markers {
            guard let found = rest.range(of: marker) else { return false }
            rest = rest[found.upperBound...]
        }
        return true
    }

    /// Runs a server whose connections have only NIO's HTTP codecs, `before` and the handler: no
    /// router behind it.
    private static func withHandlerAlone(
        _ endpoint: PushEndpoint, before: @escaping @Sendable () -> [any ChannelHandler] = { [] },
        _ body: (Int) async throws -> Void
    ) async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let channel = try await ServerBootstrap(group: group)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline(withErrorHandling: false)
                    try channel.pipeline.syncOperations.addHandler(HTTP1ToHTTPServerCodec(secure: false))
                    try channel.pipeline.syncOperations.addHandlers(before())
                    try channel.pipeline.syncOperations.addHandler(PushRequestHandler(endpoint: endpoint))
                }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        do {
            try await body(try #require(channel.localAddress?.port))
        } catch {
            try? await channel.close()
            try? await group.shutdownGracefully()
            throw error
        }
        try await channel.close()
        try await group.shutdownGracefully()
    }

    @Test func theHandlerAloneAnswersAPushWithNoRouterBehindIt() async throws {
        let temporary = try TemporaryStore()
        let journal = PushJournal(store: temporary.store, dedupeWindow: .seconds(60), highWaterJobs: 1_000)
        let endpoint = PushEndpoint(configuration: .init(), journal: journal, metrics: PushMetrics(factory: NOOPMetricsHandler.instance), logger: quietLogger)
        try await Self.withHandlerAlone(endpoint) { port in
            let connection = try RawConnection(port: port, readTimeoutSeconds: 10)
            connection.send(Self.push(41))
            let answer = await connection.read(through: #""success":"ok"}"#)
            #expect(answer.hasPrefix("HTTP/1.1 200 OK\r\n"), "\(answer)")
            #expect(answer.contains("Content-Length: ") && answer.contains("Server: orderlive") && answer.contains("Date: "))
            #expect(try temporary.store.pendingJobs(limit: 10).count + temporary.store.orders().count == 1, "answered once committed")
        }
    }

    @Test func aPushInHandWhenTheServerQuiescesIsAnsweredAndThenTheConnectionCloses() async throws {
        let temporary = try TemporaryStore()
        // Another connection holds the write lock, so the push's commit waits while the server quiesces.
        var unsafe = Configuration()
        unsafe.allowsUnsafeTransactions = true
        let lock = try DatabaseQueue(path: temporary.directory + "/orderlive.sqlite", configuration: unsafe)
        try await lock.writeWithoutTransaction { try $0.execute(sql: "BEGIN IMMEDIATE") }
        let journal = PushJournal(store: temporary.store, dedupeWindow: .seconds(60), highWaterJobs: 1_000)
        let endpoint = PushEndpoint(configuration: .init(), journal: journal, metrics: PushMetrics(factory: NOOPMetricsHandler.instance), logger: quietLogger)
        let quiesced = OneShot<Void>()
        try await Self.withHandlerAlone(endpoint, before: { [QuiesceAfterRequest(quiesced)] }) { port in
            let connection = try RawConnection(port: port, readTimeoutSeconds: 10)
            connection.send(Self.push(42))
            await quiesced.value
            try await lock.writeWithoutTransaction { try $0.execute(sql: "COMMIT") }
            let (answer, closed) = await connection.readUntilClosed()
            #expect(answer.hasPrefix("HTTP/1.1 200 OK\r\n"), "\(answer)")
            #expect(closed, "the connection stays open after the answer")
            #expect(try temporary.store.pendingJobs(limit: 10).count + temporary.store.orders().count == 1)
        }
    }

    @Test func pushesPipelinedWithOtherRequestsAreAnsweredInTheirOrder() async throws {
        try await PushServerHarness.with { harness in
            let connection = try RawConnection(port: harness.port, readTimeoutSeconds: 10)
            connection.send(Self.push(1) + "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n" + Self.push(2)
                + Self.push(3) + "GET /readyz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            let (answer, closed) = await connection.readUntilClosed()
            #expect(closed)
            #expect(answer.components(separatedBy: "HTTP/1.1 200 OK\r\n").count == 6, "\(answer)")
            #expect(Self.inOrder([#""counts":1"#, #"{"status":"ok"}"#, #""counts":1"#, #""counts":1"#, #"{"ready":true}"#], in: answer),
                    "\(answer)")
            #expect(try harness.jobs().count + harness.store.orders().count == 3)
            #expect(harness.registry.emitToString().contains(#"orderlive_push_requests_total{outcome="accepted"} 3"#))
        }
    }

    @Test func aPushRefusedByItsHeadSkipsItsBodyAndTheNextRequestIsServed() async throws {
        try await PushServerHarness.with(authentication: .bearer(secret: "s3cret-token")) { harness in
            let connection = try RawConnection(port: harness.port, readTimeoutSeconds: 10)
            connection.send(Self.push(7) + "GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            let (answer, closed) = await connection.readUntilClosed()
            #expect(closed)
            #expect(answer.hasPrefix("HTTP/1.1 401 Unauthorized\r\n"), "\(answer)")
            #expect(Self.inOrder(["authentication failed", #"{"status":"ok"}"#], in: answer), "\(answer)")
            #expect(try harness.jobs().isEmpty && harness.store.orders().isEmpty)
            #expect(!harness.logs.text.contains("s3cret-token"))
        }
    }

    @Test func aBodyInManyPiecesIsReadWhole() async throws {
        try await PushServerHarness.with { harness in
            let connection = try RawConnection(port: harness.port, readTimeoutSeconds: 10)
            let request = Array(Self.push(9).utf8)
            for start in stride(from: 0, to: request.count, by: 7) {
                connection.send(bytes: Array(request[start..<min(start + 7, request.count)]))
            }
            let answer = await connection.read(through: #""success":"ok"}"#)
            #expect(answer.hasPrefix("HTTP/1.1 200 OK\r\n"), "\(answer)")
            #expect(try harness.jobs().count + harness.store.orders().count == 1)
        }
    }
}

/// Starts the server's quiescing (as a graceful shutdown does) right after a request's end was read
/// by the handlers after it, and says so.
private final class QuiesceAfterRequest: ChannelInboundHandler, Sendable {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    private let quiesced: OneShot<Void>

    init(_ quiesced: OneShot<Void>) {
        self.quiesced = quiesced
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        context.fireChannelRead(data)
        if case .end = unwrapInboundIn(data) {
            context.fireUserInboundEventTriggered(ChannelShouldQuiesceEvent())
            quiesced.give(())
        }
    }
}
