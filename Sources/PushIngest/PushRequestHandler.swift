import HTTPTypes
import LocalHTTP
import NIOCore
import NIOHTTPTypes

/// Serves `POST /api/push` on the connection's event loop, in front of the router (DESIGN §9): the
/// head is checked, the body collected and the submission handed to the journal here, and the
/// answer written from the commit's callback. A push served through Hummingbird's router paid for a
/// request task, the router, the body's async sequence and the response writer: 16-18 µs of CPU per
/// request on this machine, half of what the bare router costs (docs/PERFORMANCE.md).
///
/// - Only a push that arrives on an idle connection is taken (nothing owed by the router). One
///   pipelined behind another request goes on to the router, whose route answers it the same way
///   (``PushEndpoint/respond(to:)``), so answers keep their order.
/// - Requests that arrive while a push taken here is being answered wait here, with their parts,
///   until its answer is written; then they are read as if they had just arrived.
/// - Bounds are the listener's (``LocalHTTP/RequestBoundsHandler``, before this one): an oversize
///   body is not passed on past the limit, a body that does not arrive in time ends with
///   ``LocalHTTP/RequestBodyTimeout``, and an answer with `Connection: close` closes the connection.
/// - When the server begins its graceful shutdown while a push is in hand, the push is answered
///   and then the connection closes (the router's connection handler would close it at once).
///
/// It sits after the HTTP-types codec (HTTP parts in and out), and runs on the channel's event loop
/// only, like every NIO handler.
final class PushRequestHandler: FrontRequestHandler {

    private enum State {
        /// Requests go on to the router.
        case passing
        /// A push's body is read.
        case reading(webhook: WebhookHeaders, body: [UInt8], trace: PushTrace)
        /// A push was answered before its end (refused by its head, too large, too slow): the rest of
        /// it is dropped.
        case skipping
        /// A push is read whole and its answer is being decided.
        case answering
    }

    /// The most parts, and bytes of bodies, held behind a push being answered (beyond: closed).
    static let heldPartsLimit = 256

    private let endpoint: PushEndpoint
    private var state = State.passing
    /// The answers owed to requests passed on to the router, before a push may be answered here.
    private var order = AnswerOrder()
    /// Parts of the requests that arrived while a push was answered.
    private var held: [HTTPRequestPart] = []
    private var heldBytes = 0
    /// Close once the push in hand is answered (graceful shutdown).
    private var closeWhenAnswered = false
    private var dates = HTTPDate()

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        receive(unwrapInboundIn(data), context: context)
    }

    init(endpoint: PushEndpoint) {
        self.endpoint = endpoint
    }

    private func receive(_ part: HTTPRequestPart, context: ChannelHandlerContext) {
        switch state {
        case .passing:
            guard case .head(let head) = part, order.isClear, Self.isPush(head) else {
                return order.pass(part, context: context)
            }
            start(head, context: context)
        case .reading(let webhook, var body, let trace):
            switch part {
            case .head:
                hold(part, context: context)  // not from a well-formed HTTP/1 stream: the codec ends a body first
            case .body(let buffer):
                guard body.count + buffer.readableBytes <= endpoint.maximumBodyBytes else {
                    answer(endpoint.tooLarge, trace, context: context)
                    state = .skipping
                    return
                }
                state = .passing  // the array has one owner while it grows
                body.append(contentsOf: buffer.readableBytesView)
                state = .reading(webhook: webhook, body: body, trace: trace)
            case .end:
                state = .answering
                let bound = NIOLoopBound((handler: self, context: context), eventLoop: context.eventLoop)
                let loop = context.eventLoop
                endpoint.answer(body: body, webhook: webhook, trace: trace) { answer in
                    loop.execute { bound.value.handler.answered(answer, trace, context: bound.value.context) }
                }
            }
        case .skipping:
            if case .end = part { state = .passing }
        case .answering:
            hold(part, context: context)
        }
    }

    /// Takes a push: what its head alone decides is answered at once.
    private func start(_ head: HTTPRequest, context: ChannelHandlerContext) {
        let trace = PushTrace(endpoint.tracer, headers: head.headerFields)
        switch endpoint.opening(head.headerFields) {
        case .proceed(let webhook):
            state = .reading(webhook: webhook, body: [], trace: trace)
        case .refused(let refusal):
            state = .skipping
            answer(refusal, trace, context: context)
        }
    }

    /// The journal decided: writes the answer, then reads what waited behind it.
    private func answered(_ answer: PushAnswer, _ trace: PushTrace, context: ChannelHandlerContext) {
        guard case .answering = state else { return }
        state = .passing
        self.answer(answer, trace, context: context)
        if closeWhenAnswered {
            context.close(promise: nil)
            return
        }
        let waiting = held
        held = []
        heldBytes = 0
        guard !waiting.isEmpty else { return }
        for part in waiting { receive(part, context: context) }
        // Read outside a read: the router's side takes what was read at a read's completion.
        context.fireChannelReadComplete()
    }

    private func answer(_ answer: PushAnswer, _ trace: PushTrace, context: ChannelHandlerContext) {
        endpoint.record(answer, trace)
        context.write(wrapOutboundOut(.head(answer.head(date: dates.now()))), promise: nil)
        context.write(wrapOutboundOut(.body(context.channel.allocator.buffer(string: answer.body))), promise: nil)
        context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
    }

    private func hold(_ part: HTTPRequestPart, context: ChannelHandlerContext) {
        if case .body(let buffer) = part { heldBytes += buffer.readableBytes }
        held.append(part)
        // Not what a client waiting for its answer sends: a flood behind one push.
        if held.count > Self.heldPartsLimit || heldBytes > endpoint.maximumBodyBytes { context.close(promise: nil) }
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        context.write(data, promise: promise)
        order.wrote(unwrapOutboundIn(data))
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        if error is RequestBodyTimeout, case .reading(_, _, let trace) = state {
            state = .skipping
            answer(endpoint.bodyTimeout, trace, context: context)
            return
        }
        context.fireErrorCaught(error)
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if event is ChannelShouldQuiesceEvent {
            switch state {
            case .reading, .answering:
                // Answered first, then closed; the router's connection handler would close it now.
                closeWhenAnswered = true
                return
            case .passing, .skipping:
                break
            }
        }
        context.fireUserInboundEventTriggered(event)
    }

    /// True for `POST /api/push` (any query).
    static func isPush(_ head: HTTPRequest) -> Bool {
        guard head.method == .post, let path = head.path else { return false }
        return path == "/api/push" || path.hasPrefix("/api/push?")
    }
}
