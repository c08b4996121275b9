/// Checked conversions for untrusted numbers. Each returns nil (or clamps, where its name says so)
/// instead of trapping; none does arithmetic that can overflow.
public enum Checked {
    /// The largest integer magnitude a JSON number holds exactly (2^53): JSON numbers are read as
    /// IEEE doubles, so an integer beyond this may already have been rounded on the way in.
    public static let largestExactJSONInteger: Int64 = 9_007_199_254_740_992

    /// The Unix times accepted from outside: 1970-01-01T00:00:00Z through 9999-12-31T23:59:59Z, the
    /// range of an RFC 3339 / IMF-fixdate four-digit year. Anything outside is not a reasonable time.
    public static let unixTimeRange: ClosedRange<Int64> = 0...253_402_300_799

    // MARK: Text

    /// Strict base-10 integer text: an optional `-` then one or more ASCII digits, nothing else (no
    /// `+`, whitespace, hex, fraction or exponent). Nil when malformed or outside `Int64`.
    public static func int64(decimal text: some StringProtocol) -> Int64? {
        var utf8 = Substring(text).utf8[...]
        let negative = utf8.first == UInt8(ascii: "-")
        if negative { utf8 = utf8.dropFirst() }
        guard !utf8.isEmpty else { return nil }
        var value: Int64 = 0
        for byte in utf8 {
            guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
            let digit = Int64(byte - UInt8(ascii: "0"))
            let (times10, overflow1) = value.multipliedReportingOverflow(by: 10)
            let (next, overflow2) = negative
                ? times10.subtractingReportingOverflow(digit) : times10.addingReportingOverflow(digit)
            if overflow1 || overflow2 { return nil }
            value = next
        }
        return value
    }

    /// Strict non-negative base-10 integer text (ASCII digits only): `Content-Length`,
    /// `Retry-After` delta-seconds, an SSE `retry:` or `id:`. Nil when malformed or over `Int64.max`.
    public static func nonNegative(decimal text: some StringProtocol) -> Int64? {
        guard let first = text.utf8.first, first != UInt8(ascii: "-") else { return nil }
        return Self.int64(decimal: text)
    }

    /// A Unix time in seconds from strict decimal text, only within ``unixTimeRange``.
    public static func unixSeconds(decimal text: some StringProtocol) -> Int64? {
        guard let value = Self.int64(decimal: text), unixTimeRange.contains(value) else { return nil }
        return value
    }

    /// Decimal text within `range`, or nil.
    public static func int(decimal text: some StringProtocol, in range: ClosedRange<Int>) -> Int? {
        guard let value = Self.int64(decimal: text), let int = Int(exactly: value), range.contains(int) else { return nil }
        return int
    }

    // MARK: Doubles

    /// A JSON number that is an integer: finite, without a fraction, and within
    /// ±``largestExactJSONInteger``. Nil otherwise (`1e19`, `NaN`, `2.5`).
    public static func jsonInteger(_ value: Double) -> Int64? {
        guard value.isFinite, value == value.rounded(.towardZero),
              let integer = Int64(exactly: value), integer.magnitude <= largestExactJSONInteger.magnitude
        else { return nil }
        return integer
    }

    /// A finite Double within `range`; nil for NaN, infinities and values outside.
    public static func finite(_ value: Double, in range: ClosedRange<Double>) -> Double? {
        guard value.isFinite, range.contains(value) else { return nil }
        return value
    }

    /// `value` clamped into `range`; NaN becomes the lower bound.
    public static func clamp(_ value: Double, to range: ClosedRange<Double>) -> Double {
        guard !value.isNaN else { return range.lowerBound }
        return min(max(value, range.lowerBound), range.upperBound)
    }

    /// `value` rounded toward zero and clamped into `Int64`; NaN becomes 0.
    public static func int64(clamping value: Double) -> Int64 {
        guard !value.isNaN else { return 0 }
        // 2^63 is exactly representable; anything at or above it would trap in Int64(_:).
        if value >= 9_223_372_036_854_775_808.0 { return .max }
        if value <= -9_223_372_036_854_775_808.0 { return .min }
        return Int64(value.rounded(.towardZero))
    }

    // MARK: Durations

    /// A duration of `seconds` clamped into `0...maximum`; NaN and negative values become zero.
    public static func duration(seconds: Double, maximum: Duration) -> Duration {
        let cap = Self.seconds(of: maximum)
        let clamped = Self.clamp(seconds, to: 0...max(0, cap))
        if clamped >= cap { return max(maximum, .zero) }
        return .milliseconds(Self.int64(clamping: (clamped * 1000).rounded(.up)))
    }

    /// A duration of `milliseconds` clamped into `0...maximum`.
    public static func duration(milliseconds: Int64, maximum: Duration) -> Duration {
        min(.milliseconds(max(0, milliseconds)), max(maximum, .zero))
    }

    /// A duration of `seconds` clamped into `0...maximum`.
    public static func duration(seconds: Int64, maximum: Duration) -> Duration {
        min(.seconds(max(0, seconds)), max(maximum, .zero))
    }

    /// A duration's length in seconds, as a Double (no trap for any duration).
    public static func seconds(of duration: Duration) -> Double {
        let (seconds, attoseconds) = duration.components
        return Double(seconds) + Double(attoseconds) / 1e18
    }

    /// A duration's whole milliseconds, clamped into `Int64` (a `Duration` holds more than that).
    public static func milliseconds(of duration: Duration) -> Int64 {
        units(of: duration, perSecond: 1000)
    }

    /// A duration's whole nanoseconds, clamped into `Int64` (about 292 years).
    public static func nanoseconds(of duration: Duration) -> Int64 {
        units(of: duration, perSecond: 1_000_000_000)
    }

    /// `duration` in units of `1 / perSecond` seconds, saturating at the ends of `Int64`.
    private static func units(of duration: Duration, perSecond: Int64) -> Int64 {
        let (seconds, attoseconds) = duration.components
        let (whole, overflow1) = seconds.multipliedReportingOverflow(by: perSecond)
        let (total, overflow2) = whole.addingReportingOverflow(attoseconds / (1_000_000_000_000_000_000 / perSecond))
        if overflow1 || overflow2 { return seconds < 0 ? .min : .max }
        return total
    }

    // MARK: Integers

    /// `a - b`, or nil when it does not fit in `Int64`.
    public static func difference(_ a: Int64, _ b: Int64) -> Int64? {
        let (result, overflow) = a.subtractingReportingOverflow(b)
        return overflow ? nil : result
    }

    /// `a + b`, saturating at the ends of `Int` (counters and attempts read back from files).
    public static func saturatingSum(_ a: Int, _ b: Int) -> Int {
        let (result, overflow) = a.addingReportingOverflow(b)
        guard overflow else { return result }
        return b > 0 ? .max : .min
    }
}
