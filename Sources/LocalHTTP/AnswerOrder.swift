public import NIOCore
public import NIOHTTPTypes

/// HTTP/1.1 answers a connection's requests in the order they came. A handler that answers some
/// requests itself, in front of the router (a push, a feed), may start answering one only when every
/// request it passed on to the router before it has been answered. This counts those: a request head
/// passed on is one more owed, the end of an answer written is one fewer. One rule for both
/// handlers; it lives on the connection's event loop with its handler.
public struct AnswerOrder: Sendable {
    /// Requests passed on to the router whose answer has not ended.
    public private(set) var unanswered = 0

    /// Nothing owed yet.
    public init() {}

    /// True when nothing passed on waits for its answer: a request read now may be answered at once.
    public var isClear: Bool { unanswered == 0 }

    /// Notes a part passed on to the router: its head makes one more answer owed.
    public mutating func passedOn(_ part: HTTPRequestPart) {
        if case .head = part { unanswered += 1 }
    }

    /// Passes `part` on toward the router and notes it (``passedOn(_:)``).
    public mutating func pass(_ part: HTTPRequestPart, context: ChannelHandlerContext) {
        passedOn(part)
        context.fireChannelRead(NIOAny(part))
    }

    /// Notes a part of an answer written toward the client; true when it ended the last answer owed,
    /// so a request held for its turn may now be answered.
    @discardableResult
    public mutating func wrote(_ part: HTTPResponsePart) -> Bool {
        guard case .end = part, unanswered > 0 else { return false }
        unanswered -= 1
        return unanswered == 0
    }
}

/// A handler in front of the router that answers some requests itself (a push, a feed) and passes
/// the rest on in order (``AnswerOrder``): request parts in and on, response parts out, removable
/// from the pipeline. The part types are fixed here for every such handler.
public protocol FrontRequestHandler: ChannelDuplexHandler, RemovableChannelHandler
where InboundIn == HTTPRequestPart, InboundOut == HTTPRequestPart,
      OutboundIn == HTTPResponsePart, OutboundOut == HTTPResponsePart {}
