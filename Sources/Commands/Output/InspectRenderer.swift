import Agent
import CurlHTTP
public import EventStream
import JSONToolkit
import ServerSentEvents

/// Turns stream updates into `inspect`'s output lines: the JSON-lines contract of DESIGN §5, or a
/// readable view. Pure: the same update gives the same text (the caller supplies the time).
public struct InspectRenderer: Sendable {
    /// JSON lines instead of the readable view.
    public var json: Bool
    /// ANSI colours in the readable view.
    public var color: Bool

    /// Creates a renderer.
    public init(json: Bool, color: Bool) {
        self.json = json
        self.color = color
    }

    /// The line for an update (without the line feed), or nil when it shows nothing. `time` is the
    /// local wall-clock time already formatted, used by the readable view.
    public func line(for update: EventSourceUpdate, time: String) -> String? {
        json ? jsonLine(for: update) : readableLine(for: update, time: time)
    }

    // MARK: JSON lines

    func jsonLine(for update: EventSourceUpdate) -> String? {
        switch update {
        case .open(let head):
            return #"{"kind":"open","status":\#(head.status),"content_type":\#(JSONText.string(head.contentType ?? ""))}"#
        case .event(let event):
            return #"{"kind":"event","type":\#(JSONText.string(event.type)),"data":\#(JSONText.string(event.data)),"#
                + #""id":\#(JSONText.string(event.lastEventID))}"#
        case .comment(let comment):
            return #"{"kind":"comment","comment":\#(JSONText.string(comment))}"#
        case .connectionLost(let error, let retryIn):
            let retry = retryIn.map { String($0.milliseconds) } ?? "null"
            return #"{"kind":"error","error":\#(JSONText.string(error.message)),"retry_in_ms":\#(retry)}"#
        case .oversizedEventDiscarded:
            return nil
        }
    }

    // MARK: Readable view

    private enum Style: String {
        case dim = "2"
        case red = "31"
        case green = "32"
        case yellow = "33"
        case cyan = "36"
        case bold = "1"
    }

    private func paint(_ text: String, _ style: Style) -> String {
        color ? "\u{1B}[\(style.rawValue)m\(text)\u{1B}[0m" : text
    }

    func readableLine(for update: EventSourceUpdate, time: String) -> String? {
        let stamp = paint(time, .dim)
        switch update {
        case .open(let head):
            return "\(stamp) \(paint("● connected", .green)) \(head.status) \(head.contentType ?? "")"
        case .event(let event):
            let id = event.lastEventID.isEmpty ? "" : " " + paint("#\(event.lastEventID)", .yellow)
            let indent = String(repeating: " ", count: time.count + 1)
            let data = Self.visible(event.data).split(separator: "\n", omittingEmptySubsequences: false)
                .joined(separator: "\n" + indent + "│ ")
            return "\(stamp) \(paint(Self.visible(event.type), .cyan))\(id)\n\(indent)│ \(data)"
        case .comment(let comment):
            return "\(stamp) \(paint(": " + Self.visible(comment), .dim))"
        case .connectionLost(let error, let retryIn):
            let next = retryIn.map { "reconnecting in \(Self.seconds($0))" } ?? "not reconnecting"
            return "\(stamp) \(paint("✖ \(Self.visible(error.message))", .red)) — \(next)"
        case .oversizedEventDiscarded(let id):
            let suffix = id.isEmpty ? "" : " (id \(Self.visible(id)))"
            return "\(stamp) \(paint("⚠ an event over the size limit was discarded\(suffix)", .yellow))"
        }
    }

    /// Control characters other than LF shown as escapes, so data cannot drive the terminal.
    static func visible(_ text: String) -> String {
        var result = ""
        result.unicodeScalars.reserveCapacity(text.unicodeScalars.count)
        for scalar in text.unicodeScalars {
            if scalar == "\n" {
                result.unicodeScalars.append(scalar)
            } else if scalar.value < 0x20 || scalar.value == 0x7F || (0x80...0x9F).contains(scalar.value) {
                result += "\\u{\(String(scalar.value, radix: 16))}"
            } else {
                result.unicodeScalars.append(scalar)
            }
        }
        return result
    }

    static func seconds(_ duration: Duration) -> String {
        let milliseconds = duration.milliseconds
        if milliseconds < 1000 { return "\(milliseconds) ms" }
        let tenths = (milliseconds + 50) / 100
        return "\(tenths / 10).\(tenths % 10) s"
    }
}
