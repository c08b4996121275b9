// ServerSentEvents: a pure, incremental parser for the WHATWG `text/event-stream` format.
// Bytes go in, events, comments and retry values come out. It does no I/O, holds no clock and
// knows nothing about connections beyond "a new response body starts" and "the body ended".

/// One dispatched event, as the WHATWG event-stream interpretation rules define it.
///
/// An event parsed into a ``ServerSentEventBatch`` keeps its data as bytes in the batch's shared
/// buffer and makes the `String` only when ``data`` is read, on the reading thread: a consumer that
/// reads the data once pays for one `String`, and one that only routes or counts events pays for
/// none. Such an event keeps that buffer (the data of every event of its batch; for the event
/// source's batches, at most one chunk of the body) alive while it lives; setting ``data`` lets it go.
public struct ServerSentEvent: Sendable, Hashable {
    /// The event type: the last `event:` field of the block, or `"message"` when it was empty or absent.
    public var type: String
    /// The last-event-ID string at dispatch time (`""` when none); it persists across events until changed.
    public var lastEventID: String
    private var storage: DataStorage

    private enum DataStorage: Sendable {
        case text(String)
        /// Bytes as received, in a buffer shared with the other events of a batch.
        case shared([UInt8], start: Int, end: Int)
    }

    /// The data buffer with its final line feed removed; invalid UTF-8 is replaced by U+FFFD (SSE-RULES 1).
    public var data: String {
        get {
            switch storage {
            case .text(let text):
                return text
            case .shared(let bytes, let start, let end):
                return bytes.withUnsafeBufferPointer { buffer in
                    String(decoding: UnsafeBufferPointer(rebasing: buffer[start..<end]), as: UTF8.self)
                }
            }
        }
        set { storage = .text(newValue) }
    }

    /// Creates an event.
    public init(type: String = "message", data: String, lastEventID: String = "") {
        self.type = type
        self.lastEventID = lastEventID
        storage = .text(data)
    }

    /// An event whose data is `bytes[start..<end]`, made a `String` when read.
    init(type: String, bytes: [UInt8], start: Int, end: Int, lastEventID: String) {
        self.type = type
        self.lastEventID = lastEventID
        storage = .shared(bytes, start: start, end: end)
    }

    public static func == (lhs: ServerSentEvent, rhs: ServerSentEvent) -> Bool {
        lhs.type == rhs.type && lhs.lastEventID == rhs.lastEventID && lhs.data == rhs.data
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(type)
        hasher.combine(data)
        hasher.combine(lastEventID)
    }
}

/// Something the parser reports, in stream order.
public enum ServerSentEventItem: Sendable, Hashable {
    /// A dispatched event.
    case event(ServerSentEvent)
    /// A comment line (`: text`), with one leading space removed; reported only when the parser is asked to.
    case comment(String)
    /// A valid `retry:` field: the new reconnection time in milliseconds.
    case retry(Int)
    /// An event was larger than ``ServerSentEventParser/Configuration/maximumEventBytes`` and was
    /// discarded whole, up to its blank line; the stream goes on after it. Its other fields still
    /// count, so this carries the last-event-ID string the event would have had.
    case oversizedEventDiscarded(lastEventID: String)
}

/// What the parser reported for some input, in stream order, with every event's data kept in one
/// buffer: parsing into a batch allocates nothing per event (the buffers grow by amortised appends
/// and keep their capacity across ``removeAll(keepingCapacity:)``). Read it as a collection of
/// ``ServerSentEventItem``s; each event's `String`s are made when read (see ``ServerSentEvent``).
public struct ServerSentEventBatch: Sendable, RandomAccessCollection {
    private enum Entry: Sendable {
        case event(type: String, lastEventID: String, start: Int, end: Int)
        case other(ServerSentEventItem)
    }

    private var bytes: [UInt8] = []
    private var entries: [Entry] = []
    /// Where the items that are not events are: a consumer of events alone never looks at them, and one
    /// that acts on retry values or discarded events finds them without walking the events.
    public private(set) var nonEventPositions: [Int] = []

    /// An empty batch.
    public init() {}

    /// An empty batch with room for `bytes` bytes of event data and `items` items.
    public init(reservingBytes bytes: Int, items: Int) {
        self.bytes.reserveCapacity(Swift.max(0, bytes))
        entries.reserveCapacity(Swift.max(0, items))
    }

    public var startIndex: Int { 0 }
    public var endIndex: Int { entries.count }

    public subscript(position: Int) -> ServerSentEventItem {
        switch entries[position] {
        case .event(let type, let lastEventID, let start, let end):
            return .event(ServerSentEvent(type: type, bytes: bytes, start: start, end: end, lastEventID: lastEventID))
        case .other(let item):
            return item
        }
    }

    /// How many bytes of event data the batch holds.
    package var dataByteCount: Int { bytes.count }

    /// Empties the batch. Events read from it before keep their own reference to its old data.
    public mutating func removeAll(keepingCapacity: Bool = false) {
        bytes.removeAll(keepingCapacity: keepingCapacity)
        entries.removeAll(keepingCapacity: keepingCapacity)
        nonEventPositions.removeAll(keepingCapacity: keepingCapacity)
    }

    mutating func appendEvent(type: String, data: UnsafeBufferPointer<UInt8>, lastEventID: String) {
        let start = bytes.count
        bytes.append(contentsOf: data)
        entries.append(.event(type: type, lastEventID: lastEventID, start: start, end: bytes.count))
    }

    mutating func append(_ item: ServerSentEventItem) {
        nonEventPositions.append(entries.count)
        entries.append(.other(item))
    }
}
