#if canImport(Glibc)
public import Glibc
#endif

/// A response's `Date` header (RFC 9110 §5.6.7, IMF-fixdate), for the handlers that answer on the
/// event loop without the router (the change feed's, the push endpoint's). Formatted once per second
/// per value: a handler keeps one and asks it for each answer.
public struct HTTPDate {
    private var second: time_t = -1
    private var text = ""

    /// Creates an empty cache.
    public init() {}

    /// Now, formatted (again only when the second changed).
    public mutating func now(_ now: time_t = time(nil)) -> String {
        if now != second {
            second = now
            text = Self.format(now)
        }
        return text
    }

    /// `now` formatted, as in `Thu, 26 Nov 2026 08:30:00 GMT`.
    public static func format(_ now: time_t) -> String {
        var parts = tm()
        var now = now
        guard gmtime_r(&now, &parts) != nil else { return "Thu, 01 Jan 1970 00:00:00 GMT" }
        let days = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
        let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
        func two(_ value: Int32) -> String { value < 10 ? "0\(value)" : "\(value)" }
        let day = days[Int(min(max(parts.tm_wday, 0), 6))]
        let month = months[Int(min(max(parts.tm_mon, 0), 11))]
        return "\(day), \(two(parts.tm_mday)) \(month) \(Int(parts.tm_year) + 1900) "
            + "\(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec)) GMT"
    }
}
