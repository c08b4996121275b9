import AsyncSignals
import CurlHTTP
import ServerSentEvents

/// What one connection's delegate hands the driver, in stream order.
enum StreamItem: Sendable {
    case head(HTTPResponseHead)
    /// What the parser completed from one chunk, events' data still bytes (made `String`s when read).
    case parsed(ServerSentEventBatch)
    /// The parser's last-event-ID string changed (also by an id-only block, SSE-RULES 14).
    case cursor(String)
    case end(Result<HTTPResponseHead, CurlError>)
}

/// Parses where the bytes land, on the curl loop thread, and hands batches of parsed items to the
/// driver through a bounded channel: a slow consumer pauses the transfer instead of growing memory.
final class ParsingDelegate<C: Clock>: StreamingResponseDelegate where C.Duration == Duration {
    private struct ParserState {
        var parser: ServerSentEventParser
        var reportedLastEventID: String
    }

    let channel: BackpressureChannel<StreamItem>
    private let parser: Locked<ParserState>
    private let activity: Locked<C.Instant>
    private let clock: C
    private let transferSlot = TransferSlot()

    init(configuration: EventSourceConfiguration, lastEventID: String, clock: C) {
        let parserConfiguration = ServerSentEventParser.Configuration(
            reportsComments: configuration.reportsComments,
            maximumEventBytes: configuration.maximumEventBytes)
        parser = Locked(ParserState(
            parser: ServerSentEventParser(configuration: parserConfiguration, lastEventID: lastEventID),
            reportedLastEventID: lastEventID))
        self.clock = clock
        activity = Locked(clock.now)
        let slot = transferSlot
        channel = BackpressureChannel(highWater: configuration.bufferLimit) { slot.resume() }
    }

    /// Connects the channel's resume signal to the transfer, once it exists.
    func attach(_ transfer: StreamingTransfer) {
        transferSlot.transfer.withLock { $0 = transfer }
    }

    /// When a byte last arrived (or the connection started).
    var lastActivity: C.Instant {
        activity.withLock { $0 }
    }

    /// Counts as activity: used while the consumer, not the server, is the slow side.
    func touch() {
        let now = clock.now
        activity.withLock { $0 = now }
    }

    func transferDidReceiveHead(_ head: HTTPResponseHead) {
        touch()
        channel.push(contentsOf: [.head(head)], cost: 0)
    }

    func transferDidReceive(_ bytes: UnsafeRawBufferPointer) -> Bool {
        touch()
        if channel.shouldPause() { return false }
        // One batch per chunk, so no event handed on shares a buffer the parser still appends to.
        var batch = ServerSentEventBatch(reservingBytes: bytes.count, items: bytes.count / 128 + 4)
        var items: [StreamItem] = []
        parser.withLock { state in
            state.parser.parse(bytes, into: &batch)
            if !batch.isEmpty { items.append(.parsed(batch)) }
            if state.parser.lastEventID != state.reportedLastEventID {
                state.reportedLastEventID = state.parser.lastEventID
                items.append(.cursor(state.parser.lastEventID))
            }
        }
        channel.push(contentsOf: items, cost: bytes.count)
        return true
    }

    func transferDidComplete(_ result: Result<HTTPResponseHead, CurlError>) {
        channel.push(contentsOf: [.end(result)], cost: 0)
        channel.finish()
    }
}
