public import CurlHTTP
public import ServerSentEvents

/// What the stream reports to its consumer, in order.
public enum EventSourceUpdate: Sendable, Hashable {
    /// A connection opened: 200 with `text/event-stream`.
    case open(HTTPResponseHead)
    /// An event.
    case event(ServerSentEvent)
    /// A comment line (only when ``EventSourceConfiguration/reportsComments`` is set).
    case comment(String)
    /// An event over the size limit was dropped; the cursor it would have set.
    case oversizedEventDiscarded(lastEventID: String)
    /// A connection was lost or refused: exactly one per loss, never for a requested restart.
    /// `retryIn` is the delay before the next attempt, nil when the stream will not reconnect.
    case connectionLost(EventSourceError, retryIn: Duration?)
}

/// What ``EventSource/runBatches(_:batchEnded:)`` reports to its consumer, in order: the same as
/// ``EventSourceUpdate``, with everything parsed from one chunk of the body handed over at once.
public enum EventSourceBatchUpdate: Sendable {
    /// A connection opened: 200 with `text/event-stream`.
    case open(HTTPResponseHead)
    /// The events, comments (when reported) and discarded oversized events of one chunk, in stream
    /// order; each event's data is made a `String` when read. A `retry:` value in it has been applied
    /// to the backoff already.
    case items(ServerSentEventBatch)
    /// A connection was lost or refused: exactly one per loss, never for a requested restart.
    /// `retryIn` is the delay before the next attempt, nil when the stream will not reconnect.
    case connectionLost(EventSourceError, retryIn: Duration?)
}

/// Why a connection attempt failed or a connection ended.
public struct EventSourceError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The kind of loss.
    public enum Kind: Sendable, Hashable {
        /// The transfer failed (DNS, refused, TLS, reset, ...).
        case transport(CurlError.Kind)
        /// The server ended the body cleanly; streams are meant to stay open, so this is a loss.
        case streamEnded
        /// A non-200 status other than 204 and 401.
        case status(Int)
        /// 200, but not `text/event-stream`.
        case contentType
        /// 401: the header provider was told.
        case unauthorized
        /// No byte arrived within the idle timeout.
        case idleTimeout
        /// The header provider could not supply headers.
        case headers
    }

    /// The kind of loss.
    public var kind: Kind
    /// A one-line description a person can act on.
    public var message: String

    /// Creates an error.
    public init(kind: Kind, message: String) {
        self.kind = kind
        self.message = message
    }

    /// The message.
    public var description: String { message }
}

/// How ``EventSource/run(_:)`` ended.
public enum EventSourceEnd: Sendable, Hashable {
    /// ``EventSource/stop()`` was called or the task was cancelled.
    case stopped
    /// The server answered 204: stop reconnecting.
    case serverRequestedStop
    /// The connection was lost and reconnecting is off.
    case connectionLost(EventSourceError)
}

/// Thrown by a header provider that cannot supply headers now: the attempt counts as failed and is
/// retried with backoff. Any other error thrown by a provider ends ``EventSource/run(_:)``. The
/// message must hold no secret.
public struct HeaderProviderFailure: Error, Sendable {
    /// What went wrong, for logs and `inspect`.
    public var message: String

    /// Creates a failure.
    public init(message: String) {
        self.message = message
    }
}

extension Duration {
    /// Whole milliseconds, rounded down.
    public var milliseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1000 + attoseconds / 1_000_000_000_000_000
    }
}
