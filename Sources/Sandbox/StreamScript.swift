public import ServerSentEvents

/// One scripted answer of the Sandbox's event stream: a status, headers, and body steps played in order.
///
/// Tests queue scripts with ``Sandbox/enqueue(_:)``; each `GET` of the event stream takes the next one,
/// and when none is queued the Sandbox serves its live order feed.
public struct StreamScript: Sendable {
    /// One step of the body.
    public enum Step: Sendable {
        /// Write these bytes as one chunk.
        case send([UInt8])
        /// Wait this long before the next step.
        case pause(Duration)
        /// Send nothing more, and keep the connection open until the client leaves or the Sandbox stops.
        case hold
        /// Break the connection here, without the end-of-body marker (a mid-stream drop).
        case drop
        /// Wait until ``Sandbox/release(_:)`` is called with this name.
        case waitFor(String)
    }

    /// The status code.
    public var status: Int
    /// Response headers; `Content-Type: text/event-stream` is the default.
    public var headers: [(String, String)]
    /// The body steps; after the last one the body ends cleanly (unless it is `.hold` or `.drop`).
    public var steps: [Step]

    /// Creates a script.
    public init(
        status: Int = 200,
        headers: [(String, String)] = [("Content-Type", "text/event-stream"), ("Cache-Control", "no-cache")],
        steps: [Step] = []
    ) {
        self.status = status
        self.headers = headers
        self.steps = steps
    }

    /// A 200 event stream that sends `text` (its LFs rewritten to `lineEnding`), then follows `then`.
    public static func stream(_ text: String, lineEnding: LineEnding = .lf, then: [Step] = []) -> StreamScript {
        StreamScript(steps: [.send(lineEnding.apply(text))] + then)
    }

    /// A bodyless answer with this status and optional extra headers.
    public static func status(_ status: Int, headers: [(String, String)] = []) -> StreamScript {
        StreamScript(status: status, headers: headers, steps: [])
    }
}
