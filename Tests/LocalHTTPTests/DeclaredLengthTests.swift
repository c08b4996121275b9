import HTTPTypes
import LocalHTTP
import Testing

/// Issue 11, sweep: `Content-Length` over the same edge values as every other number, never a trap.
@Suite(.timeLimit(.minutes(3))) struct DeclaredLengthTests {
    @Test func declaredLengthsAreCheckedTextNeverConvertedBlindly() {
        let cases: [(String?, DeclaredLength)] = [
            (nil, .acceptable), ("0", .acceptable), ("100", .acceptable), ("101", .tooLarge),
            ("9223372036854775807", .tooLarge), ("18446744073709551616", .tooLarge),
            ("99999999999999999999999999", .tooLarge), ("-1", .malformed), ("-9223372036854775808", .malformed),
            ("-0", .malformed), ("1e308", .malformed), ("NaN", .malformed), ("", .malformed), (" ", .malformed),
            ("0x10", .malformed), ("+5", .malformed), ("5 5", .malformed), ("5,5", .malformed),
        ]
        for (text, expected) in cases {
            var fields = HTTPFields()
            if let text { fields[.contentLength] = text }
            #expect(DeclaredLength(fields, maximum: 100) == expected, "\(text ?? "none")")
        }
        // Two Content-Length fields, equal or not, are no byte count; other fields are not read.
        for pair in [("5", "5"), ("5", "7")] {
            var fields = HTTPFields()
            fields.append(HTTPField(name: .contentLength, value: pair.0))
            fields.append(HTTPField(name: .contentType, value: "application/json"))
            fields.append(HTTPField(name: .contentLength, value: pair.1))
            #expect(DeclaredLength(fields, maximum: 100) == .malformed, "\(pair)")
        }
        var other = HTTPFields()
        other[.contentType] = "12345"
        other[.contentLength] = "12"
        #expect(DeclaredLength(other, maximum: 100) == .acceptable)
    }
}
