// ServerSentEvents: a pure, incremental parser for the WHATWG `text/event-stream` format.
// Bytes go in, events, comments and retry values come out. It does no I/O, holds no clock and
// knows nothing about connections beyond "a new response body starts" and "the body ended".

/// One dispatched event, as the WHATWG event-stream interpretation rules define it.
public struct ServerSentEvent: Sendable, Hashable {
    /// The event type: the last `event:` field of the block, or `"message"` when it was empty or absent.
    public var type: String
    /// The data buffer with its final line feed removed.
    public var data: String
    /// The last-event-ID string at dispatch time (`""` when none); it persists across events until changed.
    public var lastEventID: String

    /// Creates an event.
    public init(type: String = "message", data: String, lastEventID: String = "") {
        self.type = type
        self.data = data
        self.lastEventID = lastEventID
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
