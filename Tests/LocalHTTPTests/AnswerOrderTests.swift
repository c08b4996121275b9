import HTTPTypes
import LocalHTTP
import NIOCore
import NIOEmbedded
import NIOHTTPTypes
import Testing

/// The in-order answering rule (``AnswerOrder``) both front handlers follow, on an embedded channel:
/// a handler that answers `GET /own` itself, in front of a "router" the test plays (it reads what was
/// passed on and writes the answers), as the push and feed handlers sit in front of Hummingbird's.
@Suite(.timeLimit(.minutes(1))) struct AnswerOrderTests {
    /// Answers `GET /own` with 204 itself once every earlier request has been answered; holds it until then.
    final class OwnAnswers: ChannelDuplexHandler, RemovableChannelHandler {
        typealias InboundIn = HTTPRequestPart
        typealias InboundOut = HTTPRequestPart
        typealias OutboundIn = HTTPResponsePart
        typealias OutboundOut = HTTPResponsePart

        private var order = AnswerOrder()
        private var held = false
        private var inOwn = false

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            let part = unwrapInboundIn(data)
            if case .head(let head) = part, head.path == "/own" {
                inOwn = true
                if order.isClear { answer(context) } else { held = true }
                return
            }
            if inOwn {
                if case .end = part { inOwn = false }
                return
            }
            order.passedOn(part)
            context.fireChannelRead(data)
        }

        func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
            context.write(data, promise: promise)
            if order.wrote(unwrapOutboundIn(data)), held {
                held = false
                answer(context)
            }
        }

        private func answer(_ context: ChannelHandlerContext) {
            context.write(wrapOutboundOut(.head(HTTPResponse(status: .noContent))), promise: nil)
            context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
        }
    }

    static func request(_ path: String) -> [HTTPRequestPart] {
        [.head(HTTPRequest(method: .get, scheme: nil, authority: nil, path: path)), .end(nil)]
    }

    /// The statuses written so far, in order.
    static func answered(_ channel: EmbeddedChannel) throws -> [Int] {
        var statuses: [Int] = []
        while let part = try channel.readOutbound(as: HTTPResponsePart.self) {
            if case .head(let head) = part { statuses.append(head.status.code) }
        }
        return statuses
    }

    @Test func anOwnAnswerWaitsForEveryRequestPassedOnBeforeIt() throws {
        let channel = EmbeddedChannel(handler: OwnAnswers())
        for part in Self.request("/a") + Self.request("/b") + Self.request("/own") { try channel.writeInbound(part) }
        // The router got both earlier requests, nothing of the held one.
        var passed: [String] = []
        while let part = try channel.readInbound(as: HTTPRequestPart.self) {
            if case .head(let head) = part { passed.append(head.path ?? "") }
        }
        #expect(passed == ["/a", "/b"])
        #expect(try Self.answered(channel) == [], "nothing answered before /a")
        channel.write(HTTPResponsePart.head(HTTPResponse(status: .ok)), promise: nil)
        channel.writeAndFlush(HTTPResponsePart.end(nil), promise: nil)
        #expect(try Self.answered(channel) == [200], "/b is still owed: /own waits")
        channel.write(HTTPResponsePart.head(HTTPResponse(status: .accepted)), promise: nil)
        channel.writeAndFlush(HTTPResponsePart.end(nil), promise: nil)
        #expect(try Self.answered(channel) == [202, 204], "/own answered right after the answer before it")
    }

    @Test func withNothingOwedAnOwnAnswerGoesAtOnce() throws {
        let channel = EmbeddedChannel(handler: OwnAnswers())
        for part in Self.request("/own") { try channel.writeInbound(part) }
        #expect(try Self.answered(channel) == [204])
        #expect(try channel.readInbound(as: HTTPRequestPart.self) == nil)
    }

    @Test func theCountFollowsHeadsPassedOnAndAnswersEnded() {
        var order = AnswerOrder()
        #expect(order.isClear)
        order.passedOn(.head(HTTPRequest(method: .post, scheme: nil, authority: nil, path: "/x")))
        order.passedOn(.body(ByteBuffer(string: "body")))
        order.passedOn(.end(nil))
        #expect(order.unanswered == 1)
        let headEnded = order.wrote(.head(HTTPResponse(status: .ok)))
        #expect(!headEnded, "a head alone ends nothing")
        let ended = order.wrote(.end(nil))
        #expect(ended)
        #expect(order.isClear)
        let extra = order.wrote(.end(nil))
        #expect(!extra, "an answer the router wrote on its own owes nothing")
        #expect(order.isClear)
    }
}
