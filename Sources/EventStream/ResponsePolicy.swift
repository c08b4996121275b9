import CheckedInput
public import CurlHTTP

/// What a response head means for the stream (DESIGN §8; SSE-RULES 24 as amended by it).
public enum ResponseDecision: Sendable, Hashable {
    /// 200 with a `text/event-stream` media type: the stream is open.
    case open
    /// 204: the server asks the client to stop reconnecting.
    case stop
    /// 401: the credentials failed; tell the header provider, then retry.
    case unauthorized
    /// Anything else: an error, retried with backoff; `retryAfter` from a 429/503's `Retry-After`.
    case retry(reason: String, retryAfter: Duration?)

    /// Classifies a head. `now` is the wall clock in Unix seconds, for an HTTP-date `Retry-After`;
    /// a `Retry-After` is clamped to `maximum` (the reconnect maximum, `stream.max_delay_ms`).
    public static func classify(
        _ head: HTTPResponseHead, now: Int64, maximum: Duration = .seconds(86_400)
    ) -> ResponseDecision {
        switch head.status {
        case 204:
            return .stop
        case 401:
            return .unauthorized
        case 200:
            let contentType = head.contentType ?? ""
            if mediaTypeEssence(contentType) == "text/event-stream" { return .open }
            let shown = contentType.isEmpty ? "no Content-Type" : "Content-Type \(contentType)"
            return .retry(reason: "expected text/event-stream, got \(shown)", retryAfter: nil)
        default:
            var retryAfter: Duration?
            if head.status == 429 || head.status == 503, let value = head.headers["Retry-After"] {
                retryAfter = parseRetryAfter(value, now: now, maximum: maximum)
            }
            return .retry(reason: "HTTP \(head.status)", retryAfter: retryAfter)
        }
    }

    /// The media type without parameters, lower-cased: `Text/Event-Stream; charset=x` → `text/event-stream`.
    public static func mediaTypeEssence(_ value: String) -> String {
        let type = value.split(separator: ";", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
        return type.trimming().lowercased()
    }

    /// `Retry-After` as delta-seconds or an IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`), clamped
    /// to `0...maximum`; nil when it is neither. Every number in it is checked before any
    /// arithmetic (DESIGN §10): a count of seconds past `Int64`, a year past 9999 or a wall clock
    /// far from the date clamp, never trap.
    public static func parseRetryAfter(_ value: String, now: Int64, maximum: Duration = .seconds(86_400)) -> Duration? {
        let trimmed = value.trimming()
        if !trimmed.isEmpty, trimmed.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) {
            // All digits: more than Int64 holds is still "a very long time".
            let seconds = Checked.nonNegative(decimal: trimmed) ?? .max
            return Checked.duration(seconds: seconds, maximum: maximum)
        }
        guard let date = parseIMFFixdate(trimmed) else { return nil }
        let seconds = Checked.difference(date, now) ?? (date > now ? .max : 0)
        return Checked.duration(seconds: seconds, maximum: maximum)
    }

    /// Unix seconds of an IMF-fixdate with a year from 1970 to 9999, or nil.
    static func parseIMFFixdate(_ value: String) -> Int64? {
        // "Sun, 06 Nov 1994 08:49:37 GMT"
        let parts = value.split(separator: " ")
        guard parts.count == 6, parts[5] == "GMT",
              let day = Checked.int(decimal: parts[1], in: 1...31),
              let year = Checked.int(decimal: parts[3], in: 1970...9999)
        else { return nil }
        let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
        guard let monthIndex = months.firstIndex(of: String(parts[2])) else { return nil }
        let time = parts[4].split(separator: ":")
        guard time.count == 3, let hour = Checked.int(decimal: time[0], in: 0...23),
              let minute = Checked.int(decimal: time[1], in: 0...59),
              let second = Checked.int(decimal: time[2], in: 0...60)
        else { return nil }
        // Every operand is bounded above, so no step can overflow.
        return Checked.daysFromCivil(year: year, month: monthIndex + 1, day: day) * 86_400
            + Int64(hour * 3600 + minute * 60 + second)
    }
}
