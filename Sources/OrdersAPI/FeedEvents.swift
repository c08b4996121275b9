import JSONToolkit
import NIOCore
import ServerSentEvents
import StoreModel

/// The change feed's events as Server-Sent Events text (DESIGN §11). Every event ends with a blank
/// line; a payload that spans lines (an order body sent pretty-printed) becomes one `data:` line per
/// line, which the client joins back with `\n`.
public enum FeedEvents {
    /// Sent once at the start: how long a client waits before reconnecting.
    static let retry = ServerSentEventWriter.retry(milliseconds: 1000)
    /// The idle-stream comment.
    static let heartbeat = ServerSentEventWriter.comment("heartbeat")

    /// One event (``ServerSentEventWriter``: one `data:` line per line of `data`).
    static func event(_ name: String, id: Int64? = nil, data: String) -> String {
        ServerSentEventWriter.event(name, id: id.map { String($0) }, data: data)
    }

    /// `event: snapshot` for one order of a snapshot.
    static func snapshot(_ order: OrderRecord) -> String {
        event("snapshot", data: #"{"order":"# + order.body + "}")
    }

    /// `event: ready` after a snapshot: live changes follow from `seq`.
    static func ready(_ seq: Int64) -> String {
        event("ready", id: seq, data: #"{"seq":\#(seq)}"#)
    }

    /// `event: reset`: the client's id cannot be resumed; a fresh snapshot follows.
    static func reset(_ reason: String) -> String {
        event("reset", data: #"{"reason":\#(JSONText.string(reason))}"#)
    }

    /// `event: overflow`: the subscriber fell too far behind and the stream ends; resume with the last id.
    static func overflow(buffer: Int) -> String {
        event("overflow", data: #"{"message":"this subscriber fell \#(buffer) changes behind and was cut off; reconnect with Last-Event-ID to resume"}"#)
    }

    /// Which event a change is for a view: `order.upserted` while the order is in the view,
    /// `order.removed` when it leaves it, `order.deleted` when a viewed order is deleted, nothing
    /// when the order was and stays outside the view.
    static func relevance(of change: OrderChange, to filter: OrderFilter) -> FeedChange.Event? {
        let wasIn = change.before.map(filter.matches) ?? false
        switch change.kind {
        case .upserted:
            if change.after.map(filter.matches) ?? false { return .upserted }
            return wasIn ? .removed : nil
        case .deleted:
            // A view hears of the deletion of an order it showed.
            return wasIn ? .deleted : nil
        }
    }

    static func upserted(_ change: OrderChange) -> String {
        event("order.upserted", id: change.seq, data: #"{"seq":\#(change.seq),"order":"# + (change.body ?? "null") + "}")
    }

    static func removed(_ change: OrderChange) -> String {
        event("order.removed", id: change.seq, data: #"{"seq":\#(change.seq),"order_id":\#(JSONText.string(change.orderID))}"#)
    }

    static func deleted(_ change: OrderChange) -> String {
        let version = change.version.map { String($0) } ?? "null"
        return event("order.deleted", id: change.seq,
                     data: #"{"seq":\#(change.seq),"order_id":\#(JSONText.string(change.orderID)),"version":\#(version)}"#)
    }
}

/// One event's bytes twice over, in one storage: as an HTTP/1.1 chunk (`<hex length>CRLF<event>CRLF`),
/// which a live connection writes as-is beneath Hummingbird's encoder, and the event alone, which the
/// snapshot and backlog write through it.
struct FeedBytes: Sendable {
    /// The chunk.
    let chunk: ByteBuffer
    /// The event (a slice of the chunk).
    let event: ByteBuffer

    /// The bytes of `text`.
    init(_ text: String) {
        let length = text.utf8.count
        let prefix = String(length, radix: 16) + "\r\n"
        var chunk = ByteBufferAllocator().buffer(capacity: prefix.utf8.count + length + 2)
        chunk.writeString(prefix)
        chunk.writeString(text)
        chunk.writeString("\r\n")
        self.chunk = chunk
        // In range by construction; an empty event is the fallback that can never be taken.
        event = chunk.getSlice(at: prefix.utf8.count, length: length) ?? ByteBuffer()
    }

    /// The heartbeat comment.
    static let heartbeat = FeedBytes(FeedEvents.heartbeat)
}

/// One committed change as the hub fans it out: each event's bytes are made at most once, however
/// many subscribers they go to, and every connection writes that same buffer (ByteBuffer shares its
/// storage; nothing is copied per subscriber). Only the hub's task touches it while it is made.
final class FeedChange: Sendable {
    /// The event a change is for one view.
    enum Event { case upserted, removed, deleted }

    let change: OrderChange
    let upserted: FeedBytes?
    let removed: FeedBytes?
    let deleted: FeedBytes?

    init(_ change: OrderChange) {
        self.change = change
        switch change.kind {
        case .upserted:
            upserted = FeedBytes(FeedEvents.upserted(change))
            removed = change.before == nil ? nil : FeedBytes(FeedEvents.removed(change))
            deleted = nil
        case .deleted:
            upserted = nil
            removed = nil
            deleted = FeedBytes(FeedEvents.deleted(change))
        }
    }

    /// The event's bytes for a view, nil when the view does not hear of it.
    func bytes(for filter: OrderFilter) -> FeedBytes? {
        switch FeedEvents.relevance(of: change, to: filter) {
        case .upserted: upserted
        case .removed: removed
        case .deleted: deleted
        case nil: nil
        }
    }
}
