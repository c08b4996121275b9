/// Server-Sent Events text, written once for every place that serves a stream: the orders API's
/// change feed, the Sandbox's order book and live feed. What it writes, ``ServerSentEventParser``
/// reads back as the same event (tested at every split).
///
/// A payload that spans lines (an order body sent pretty-printed) becomes one `data:` line per line,
/// which a client joins back with `\n`; CR, LF and CRLF in the payload all end a line, as the parser
/// reads them. A type or id must be one line: the writer's callers make them from numbers and fixed
/// names, never from input.
public enum ServerSentEventWriter {
    /// One event: `id:` (when given), `event:` (when not `message`), `data:` lines, a blank line.
    public static func event(_ type: String = "message", id: String? = nil, data: String) -> String {
        var text = ""
        text.reserveCapacity(data.utf8.count + type.utf8.count + (id?.utf8.count ?? 0) + 24)
        if let id {
            text += "id: "
            text += id
            text += "\n"
        }
        if type != "message" {
            text += "event: "
            text += type
            text += "\n"
        }
        var start = data.startIndex
        var index = data.startIndex
        while index < data.endIndex {
            let character = data[index]
            if character == "\n" || character == "\r" || character == "\r\n" {
                text += "data: "
                text += data[start..<index]
                text += "\n"
                start = data.index(after: index)
            }
            index = data.index(after: index)
        }
        text += "data: "
        text += data[start...]
        text += "\n\n"
        return text
    }

    /// A comment block (`: text`), which a client ignores: heartbeats and banners. A multi-line
    /// text becomes one comment line per line.
    public static func comment(_ text: String) -> String {
        text.split(omittingEmptySubsequences: false, whereSeparator: { $0 == "\n" || $0 == "\r" || $0 == "\r\n" })
            .map { ": " + $0 + "\n" }.joined() + "\n"
    }

    /// A `retry:` block: how many milliseconds a client waits before reconnecting.
    public static func retry(milliseconds: Int) -> String {
        "retry: \(max(0, milliseconds))\n\n"
    }
}
