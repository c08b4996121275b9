import HTTPTypes
import LocalHTTP
import NIOCore
import NIOEmbedded
import NIOHTTPTypes
import Synchronization
import Testing
import HummingbirdCore

/// The listener floor's connection limit and request bounds on embedded channels, their clocks
/// driven by the test (STYLE: a handler is tested on an `EmbeddedChannel`; real sockets stay for the
/// end-to-end attacks in HostileClientTests).
@Suite(.timeLimit(.minutes(3))) struct ListenerHandlerTests {
    static func connected(_ handlers: [any ChannelHandler], from peer: String = "127.0.0.1") throws -> EmbeddedChannel {
        let channel = EmbeddedChannel()
        try channel.pipeline.syncOperations.addHandlers(handlers)
        try channel.connect(to: SocketAddress(ipAddress: peer, port: 1)).wait()
        return channel
    }

    @Test func aHeadThatDoesNotArriveInTimeClosesTheConnection() throws {
        let channel = try Self.connected([RequestBoundsHandler(maximumBodyBytes: 100, readTimeout: .seconds(10))])
        channel.embeddedEventLoop.advanceTime(by: .seconds(9))
        #expect(channel.isActive)
        channel.embeddedEventLoop.advanceTime(by: .seconds(1))
        #expect(!channel.isActive)
    }

    @Test func aBodyThatDoesNotArriveInTimeIsAnErrorForItsReader() throws {
        let channel = try Self.connected([RequestBoundsHandler(maximumBodyBytes: 100, readTimeout: .seconds(10))])
        var head = HTTPRequest(method: .post, scheme: nil, authority: nil, path: "/api/push")
        head.headerFields[.contentLength] = "50"
        try channel.writeInbound(HTTPRequestPart.head(head))
        try channel.writeInbound(HTTPRequestPart.body(ByteBuffer(string: "{")))
        channel.embeddedEventLoop.advanceTime(by: .seconds(10))
        #expect(throws: RequestBodyTimeout.self) { try channel.throwIfErrorCaught() }
        // Its answer closes the connection, so the rest of the body is never read.
        try channel.writeOutbound(HTTPResponsePart.head(HTTPResponse(status: .requestTimeout)))
        try channel.writeOutbound(HTTPResponsePart.end(nil))
        #expect(!channel.isActive)
    }

    @Test func aBodyOverTheLimitIsNotPassedOnAndTheAnswerCloses() throws {
        let channel = try Self.connected([RequestBoundsHandler(maximumBodyBytes: 4, readTimeout: .seconds(10))])
        try channel.writeInbound(HTTPRequestPart.head(HTTPRequest(method: .post, scheme: nil, authority: nil, path: "/")))
        try channel.writeInbound(HTTPRequestPart.body(ByteBuffer(string: "abc")))
        try channel.writeInbound(HTTPRequestPart.body(ByteBuffer(string: "def")))
        try channel.writeInbound(HTTPRequestPart.body(ByteBuffer(string: "ghi")))
        var passed = 0
        while let part = try channel.readInbound(as: HTTPRequestPart.self) {
            if case .body = part { passed += 1 }
        }
        #expect(passed == 2, "the part that crosses the limit reaches the reader, nothing after it")
        try channel.writeOutbound(HTTPResponsePart.head(HTTPResponse(status: .contentTooLarge)))
        #expect(channel.isActive)
        try channel.writeOutbound(HTTPResponsePart.end(nil))
        #expect(!channel.isActive)
    }

    @Test func aRefusalRendersItselfInGorushsShape() {
        let response = JSONError(.serviceUnavailable, "a \"quoted\"\nreason", retryAfter: 5, close: true).response
        #expect(response.status == .serviceUnavailable)
        #expect(response.headers[.retryAfter] == "5" && response.headers[.connection] == "close")
        #expect(response.headers[.contentType] == "application/json; charset=utf-8")
        #expect(Listener.constantTimeEqual("token".utf8, "token".utf8))
        #expect(!Listener.constantTimeEqual("token".utf8, "tokens".utf8))
        #expect(Listener.isLoopback("127.0.0.1") && Listener.isLoopback("::1") && !Listener.isLoopback("0.0.0.0"))
    }
}

/// What a listener's admission closed, by reason; its callback is `@Sendable`.
final class Closures: Sendable {
    private let value = Mutex<[ConnectionClosure]>([])
    func add(_ reason: ConnectionClosure) { value.withLock { $0.append(reason) } }
    var all: [ConnectionClosure] { value.withLock { $0 } }
}
