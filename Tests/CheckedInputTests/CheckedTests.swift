import CheckedInput
import Foundation
import Testing

/// The edge values every sweep site is tested with (issue 11): the ends of Int64, one past
/// UInt64 as text, a huge double, negative zero, NaN, empty, whitespace and hex.
enum EdgeText {
    static let all = [
        "-9223372036854775808", "9223372036854775807", "9223372036854775808", "18446744073709551616",
        "1e308", "-0", "NaN", "", " ", " 12", "12 ", "0x10", "+5", "1.5", "٣", "99999999999999999999999999999",
    ]
}

@Suite(.timeLimit(.minutes(3))) struct CheckedTests {
    @Test(arguments: [
        ("0", Int64(0)), ("-0", 0), ("42", 42), ("-42", -42),
        ("9223372036854775807", .max), ("-9223372036854775808", .min),
    ])
    func decimalTextWithinInt64IsRead(_ text: String, _ expected: Int64) {
        #expect(Checked.int64(decimal: text) == expected)
    }

    @Test(arguments: [
        "9223372036854775808", "-9223372036854775809", "18446744073709551616", "1e308", "NaN", "", " ", "-",
        " 12", "12 ", "0x10", "+5", "1.5", "٣", "99999999999999999999999999999",
    ])
    func anythingElseIsNil(_ text: String) {
        #expect(Checked.int64(decimal: text) == nil)
    }

    @Test func nonNegativeRefusesASignEvenOnZero() {
        #expect(Checked.nonNegative(decimal: "-0") == nil)
        #expect(Checked.nonNegative(decimal: "-1") == nil)
        #expect(Checked.nonNegative(decimal: "0") == 0)
        #expect(Checked.nonNegative(decimal: "9223372036854775807") == .max)
    }

    @Test func unixSecondsAreBetween1970And9999() {
        #expect(Checked.unixSeconds(decimal: "0") == 0)
        #expect(Checked.unixSeconds(decimal: "253402300799") == 253_402_300_799)
        #expect(Checked.unixSeconds(decimal: "253402300800") == nil)
        #expect(Checked.unixSeconds(decimal: "-1") == nil)
        for text in EdgeText.all where text != "-0" {
            #expect(Checked.unixSeconds(decimal: text) == nil, "\(text)")
        }
    }

    @Test(arguments: [
        (0.0, Int64?(0)), (-0.0, 0), (42, 42), (-42, -42), (9_007_199_254_740_992, 9_007_199_254_740_992),
        (9_007_199_254_740_994, nil), (-9_007_199_254_740_994, nil), (1e19, nil), (-1e19, nil), (1e308, nil),
        (.infinity, nil), (-.infinity, nil), (.nan, nil), (2.5, nil), (-0.5, nil),
        (Double(Int64.max), nil), (Double(Int64.min), nil),
    ])
    func jsonIntegersAreExactAndWithin2To53(_ value: Double, _ expected: Int64?) {
        #expect(Checked.jsonInteger(value) == expected)
    }

    @Test func foundationNumbersAreCheckedAndBooleansAreNotIntegers() throws {
        let text = #"{"a":1,"b":true,"c":1e19,"d":-0,"e":18446744073709551616,"f":"7","g":null,"h":2.5}"#
        let object = try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
        #expect(Checked.jsonInteger(object["a"]) == 1)
        #expect(Checked.jsonInteger(object["b"]) == nil)
        #expect(Checked.jsonInteger(object["c"]) == nil)
        #expect(Checked.jsonInteger(object["d"]) == 0)
        #expect(Checked.jsonInteger(object["e"]) == nil)
        #expect(Checked.jsonInteger(object["f"]) == nil)
        #expect(Checked.jsonInteger(object["g"]) == nil)
        #expect(Checked.jsonInteger(object["h"]) == nil)
        #expect(Checked.jsonInteger(nil) == nil)
        let big = try #require(try JSONSerialization.jsonObject(
            with: Data(#"[9007199254740993,9007199254740992,-9007199254740992]"#.utf8)) as? [Any])
        #expect(Checked.jsonInteger(big[0]) == nil, "2^53 + 1 must not round to 2^53 and pass")
        #expect(Checked.jsonInteger(big[1]) == 9_007_199_254_740_992)
        #expect(Checked.jsonInteger(big[2]) == -9_007_199_254_740_992)
        #expect(Checked.jsonNumber(object["h"]) == 2.5)
        #expect(Checked.jsonNumber(object["b"]) == nil)
    }

    @Test(arguments: [
        (Double.nan, Duration.zero), (-.infinity, .zero), (-5, .zero), (-0.0, .zero), (0.0015, .milliseconds(2)),
        (1.5, .milliseconds(1500)), (30, .seconds(30)), (31, .seconds(30)), (1e308, .seconds(30)),
        (.infinity, .seconds(30)),
    ])
    func durationsFromSecondsAreClamped(_ seconds: Double, _ expected: Duration) {
        #expect(Checked.duration(seconds: seconds, maximum: .seconds(30)) == expected)
    }

    @Test func durationsFromIntegersAreClamped() {
        #expect(Checked.duration(seconds: Int64.max, maximum: .seconds(30)) == .seconds(30))
        #expect(Checked.duration(seconds: Int64.min, maximum: .seconds(30)) == .zero)
        #expect(Checked.duration(milliseconds: Int64.max, maximum: .seconds(30)) == .seconds(30))
        #expect(Checked.duration(milliseconds: Int64.min, maximum: .seconds(30)) == .zero)
        #expect(Checked.duration(milliseconds: 250, maximum: .seconds(30)) == .milliseconds(250))
    }

    @Test func durationComponentsSaturateInsteadOfTrapping() {
        let huge = Duration.seconds(Int64.max)
        #expect(Checked.nanoseconds(of: huge) == .max)
        #expect(Checked.milliseconds(of: huge) == .max)
        #expect(Checked.nanoseconds(of: .seconds(Int64.min)) == .min)
        #expect(Checked.nanoseconds(of: .milliseconds(1500)) == 1_500_000_000)
        #expect(Checked.milliseconds(of: .milliseconds(1500)) == 1500)
        #expect(Checked.seconds(of: .milliseconds(1500)) == 1.5)
    }

    @Test func clampingDoublesIntoInt64NeverTraps() {
        #expect(Checked.int64(clamping: .nan) == 0)
        #expect(Checked.int64(clamping: .infinity) == .max)
        #expect(Checked.int64(clamping: -.infinity) == .min)
        #expect(Checked.int64(clamping: 1e308) == .max)
        #expect(Checked.int64(clamping: 9_223_372_036_854_775_808.0) == .max)
        #expect(Checked.int64(clamping: -9_223_372_036_854_775_808.0) == .min)
        #expect(Checked.int64(clamping: -2.9) == -2)
    }

    @Test func integerArithmeticReportsInsteadOfTrapping() {
        #expect(Checked.difference(.max, -1) == nil)
        #expect(Checked.difference(.min, 1) == nil)
        #expect(Checked.difference(10, 3) == 7)
        #expect(Checked.saturatingSum(.max, 1) == .max)
        #expect(Checked.saturatingSum(.min, -1) == .min)
        #expect(Checked.int(decimal: "70000", in: 0...65_535) == nil)
        #expect(Checked.int(decimal: "8080", in: 0...65_535) == 8080)
    }
}

/// RFC 3339 read by hand: ICU's date parser stopped the process with SIGFPE on a long fraction
/// (found by the token-pair fuzzer).
@Suite(.timeLimit(.minutes(3))) struct RFC3339Tests {
    @Test(arguments: [
        ("1970-01-01T00:00:00Z", 0.0), ("2030-01-01T00:00:00Z", 1_893_456_000), ("2030-01-01t00:00:00z", 1_893_456_000),
        ("2030-01-01 00:00:00Z", 1_893_456_000), ("2030-01-01T00:00:00.5Z", 1_893_456_000.5),
        ("2030-01-01T02:00:00+02:00", 1_893_456_000), ("2029-12-31T23:00:00-01:00", 1_893_456_000),
        ("2024-02-29T00:00:00Z", 1_709_164_800), ("1994-11-06T08:49:37Z", 784_111_777),
        ("2030-01-01T00:00:00." + String(repeating: "1", count: 100) + "5Z", 1_893_456_000.111111111),
    ])
    func validTimestampsAreRead(_ text: String, _ expected: Double) {
        #expect(Checked.rfc3339(text) == expected, "\(text)")
    }

    @Test(arguments: [
        "", " ", "2030", "2030-01-01", "2030-01-01T00:00:00", "2030-13-01T00:00:00Z", "2030-02-29T00:00:00Z",
        "2030-01-32T00:00:00Z", "2030-01-01T24:00:00Z", "2030-01-01T00:60:00Z", "2030-01-01T00:00:61Z",
        "2030-01-01T00:00:00.Z", "2030-01-01T00:00:00+2:00", "2030-01-01T00:00:00+24:00", "2030-01-01T00:00:00Zx",
        "-9223372036854775808", "1e308", "NaN", "0x10", "+2030-01-01T00:00:00Z", "99999-01-01T00:00:00Z",
    ])
    func anythingElseIsNil(_ text: String) {
        #expect(Checked.rfc3339(text) == nil, "\(text)")
    }

    @Test(arguments: [
        (Int64(0), "1970-01-01T00:00:00.000Z"), (-1, "1969-12-31T23:59:59.999Z"),
        (951_782_400_000, "2000-02-29T00:00:00.000Z"), (1_709_164_799_999, "2024-02-28T23:59:59.999Z"),
        (1_893_456_000_500, "2030-01-01T00:00:00.500Z"), (-62_167_219_200_000, "0000-01-01T00:00:00.000Z"),
        (253_402_300_799_999, "9999-12-31T23:59:59.999Z"), (-2_208_988_800_001, "1899-12-31T23:59:59.999Z"),
    ])
    func millisecondsAreWrittenAsUTC(_ milliseconds: Int64, _ expected: String) {
        #expect(Checked.rfc3339(unixMilliseconds: milliseconds, fraction: true) == expected)
        #expect(Checked.rfc3339(unixMilliseconds: milliseconds, fraction: false) == expected.dropLast(5) + "Z")
    }

    @Test(arguments: [Int64.min, -62_167_219_200_001, 253_402_300_800_000, Int64.max])
    func timesOutsideYearsZeroToNineThousandNineHundredNinetyNineAreNil(_ milliseconds: Int64) {
        #expect(Checked.rfc3339(unixMilliseconds: milliseconds, fraction: true) == nil)
    }

    /// Every written timestamp reads back as the same instant, over the whole range (a fixed
    /// pseudo-random walk, so a failure repeats), and agrees with Foundation's ICU formatter where
    /// both use the Gregorian calendar (ICU switches to the Julian one before 1582).
    @Test func writtenTimestampsReadBackAndAgreeWithFoundation() {
        var state: UInt64 = 0x9E37_79B9_7F4A_7C15
        let low: Int64 = -62_167_219_200_000
        let span = UInt64(253_402_300_799_999 - low + 1)
        let foundation = ISO8601DateFormatter()
        foundation.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        for _ in 0..<20_000 {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            let milliseconds = low + Int64(state % span)
            guard let text = Checked.rfc3339(unixMilliseconds: milliseconds, fraction: true) else {
                Issue.record("nil for \(milliseconds)")
                return
            }
            #expect(Checked.rfc3339(text).map { ($0 * 1000).rounded() } == Double(milliseconds), "\(text)")
            if milliseconds >= -12_219_292_800_000 {  // 1582-10-15
                let date = Date(timeIntervalSince1970: Double(milliseconds) / 1000)
                #expect(foundation.string(from: date) == text, "\(milliseconds)")
            }
        }
    }
}
