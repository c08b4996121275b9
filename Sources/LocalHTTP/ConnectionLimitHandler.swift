import NIOCore
import Synchronization

/// How many connections a listener holds open, shared by the handlers of all its connections.
public final class ConnectionCounter: Sendable {
    /// The most connections held at once (`ingest.max_connections`).
    public let limit: Int
    private let open = Atomic<Int>(0)

    /// Creates a counter of at most `limit` connections.
    public init(limit: Int) {
        self.limit = limit
    }

    /// The connections open now.
    public var current: Int { open.load(ordering: .relaxed) }

    /// Takes a place; false (and nothing taken) when the listener is full.
    func acquire() -> Bool {
        let after = open.wrappingAdd(1, ordering: .acquiringAndReleasing).newValue
        if after <= limit { return true }
        open.wrappingSubtract(1, ordering: .acquiringAndReleasing)
        return false
    }

    /// Gives a place back.
    func release() {
        open.wrappingSubtract(1, ordering: .acquiringAndReleasing)
    }
}

/// Refuses a connection at once — closed before any byte is read — when the listener already holds
/// `ingest.max_connections`, so idle or slow clients cannot take every file descriptor and stop the
/// agent from serving the rest (DESIGN §10). It runs on the channel's event loop only.
public final class ConnectionLimitHandler: ChannelInboundHandler, RemovableChannelHandler {
    public typealias InboundIn = NIOAny

    private let counter: ConnectionCounter
    private let refused: @Sendable () -> Void
    private var holdsPlace = false
    private var decided = false

    /// Creates the handler of one connection; `refused` runs when it is refused (to count it).
    public init(counter: ConnectionCounter, refused: @escaping @Sendable () -> Void) {
        self.counter = counter
        self.refused = refused
    }

    public func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { admit(context) }
    }

    public func channelActive(context: ChannelHandlerContext) {
        admit(context)
        context.fireChannelActive()
    }

    public func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard holdsPlace else { return }
        context.fireChannelRead(data)
    }

    public func channelInactive(context: ChannelHandlerContext) {
        giveBack()
        context.fireChannelInactive()
    }

    public func handlerRemoved(context: ChannelHandlerContext) {
        giveBack()
    }

    private func admit(_ context: ChannelHandlerContext) {
        guard !decided else { return }
        decided = true
        holdsPlace = counter.acquire()
        if !holdsPlace {
            refused()
            context.close(promise: nil)
        }
    }

    private func giveBack() {
        if holdsPlace {
            holdsPlace = false
            counter.release()
        }
    }
}
