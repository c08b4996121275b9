import NIOCore
import NIOEmbedded
import NIOHTTP1
import LocalHTTP
import Testing

/// HTTPVersionHandler on an embedded channel (STYLE: a handler is tested on an `EmbeddedChannel`):
/// each response in the framing its request's version allows, and the close a request asked for.
@Suite(.timeLimit(.minutes(3))) struct HTTPVersionHandlerTests {
    let channel = EmbeddedChannel()

    init() throws {
        try channel.pipeline.syncOperations.addHandler(HTTPVersionHandler())
        // An embedded channel is active once "connected"; closing makes it inactive again.
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).wait()
        #expect(channel.isActive)
    }

    func request(_ version: HTTPVersion, connection: String? = nil) throws {
        var headers = HTTPHeaders()
        if let connection { headers.add(name: "Connection", value: connection) }
        try channel.writeInbound(HTTPServerRequestPart.head(HTTPRequestHead(version: version, method: .GET, uri: "/", headers: headers)))
        try channel.writeInbound(HTTPServerRequestPart.end(nil))
        _ = try channel.readInbound(as: HTTPServerRequestPart.self)
        _ = try channel.readInbound(as: HTTPServerRequestPart.self)
    }

    /// Writes a response as Hummingbird's codec does (always an HTTP/1.1 head) and returns the head sent.
    func respond(length: Int?) throws -> HTTPResponseHead? {
        var headers = HTTPHeaders()
        if let length { headers.add(name: "Content-Length", value: String(length)) }
        try channel.writeOutbound(HTTPServerResponsePart.head(HTTPResponseHead(version: .http1_1, status: .ok, headers: headers)))
        try channel.writeOutbound(HTTPServerResponsePart.end(nil))
        guard case .head(let head) = try channel.readOutbound(as: HTTPServerResponsePart.self) else { return nil }
        _ = try channel.readOutbound(as: HTTPServerResponsePart.self)
        return head
    }

    @Test func anHTTP10RequestGetsAnHTTP10HeadAndTheConnectionCloses() throws {
        #expect(HTTPVersionHandler().nextResponseIsChunkable)
        try request(.http1_0)
        let handler = try channel.pipeline.syncOperations.handler(type: HTTPVersionHandler.self)
        #expect(!handler.nextResponseIsChunkable, "a body of unknown length must end with the connection")
        let head = try #require(try respond(length: 2))
        #expect(head.version == .http1_0)
        #expect(head.headers["connection"] == ["close"])
        #expect(!channel.isActive, "closed once the response's end was written")
    }

    @Test func anHTTP10KeepAliveWithALengthKeepsTheConnectionAndOneWithoutClosesIt() throws {
        try request(.http1_0, connection: "keep-alive")
        let kept = try #require(try respond(length: 2))
        #expect(kept.version == .http1_0 && kept.headers["connection"] == ["keep-alive"])
        #expect(channel.isActive)
        try request(.http1_0, connection: "Keep-Alive")
        let streamed = try #require(try respond(length: nil))
        #expect(streamed.headers["connection"] == ["close"], "no length: the close ends the body")
        #expect(streamed.headers["transfer-encoding"].isEmpty)
        #expect(!channel.isActive)
    }

    @Test func http11KeepsItsConnectionUnlessItAsksToCloseInAnyCase() throws {
        try request(.http1_1)
        let kept = try #require(try respond(length: nil))
        #expect(kept.version == .http1_1 && kept.headers["connection"].isEmpty)
        #expect(channel.isActive)
        // Pipelined: both heads read before either answer; each answer goes to its own request.
        try request(.http1_1, connection: "TE, Close")
        let closing = try #require(try respond(length: 2))
        #expect(closing.version == .http1_1 && closing.headers["connection"] == ["close"])
        #expect(!channel.isActive)
    }
}
