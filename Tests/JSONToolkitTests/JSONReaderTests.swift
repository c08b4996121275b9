import Foundation
import Testing

import JSONToolkit

@Suite struct JSONReaderTests {
    @Test func readsEveryKindOfValue() {
        let text = #" {"a": [1, -2.5, 3e2, 0, -0.0e-1], "b": {"c": null, "d": true, "e": false}, "s": "x\"\\\/\b\f\n\r\t\u00e9\ud83d\ude00€"} "#
        let expected: JSONValue = .object([
            "a": .array([.number(1), .number(-2.5), .number(300), .number(0), .number(-0.0)]),
            "b": .object(["c": .null, "d": .bool(true), "e": .bool(false)]),
            "s": .string("x\"\\/\u{8}\u{c}\n\r\t\u{e9}\u{1F600}€"),
        ])
        #expect(JSONReader.parse(Array(text.utf8)) == expected)
    }

    @Test(arguments: [
        "", " ", "{", "}", "[1,]", "{\"a\":1,}", "{\"a\" 1}", "{'a':1}", "01", "1.", ".5", "-", "1e", "+1", "NaN",
        "tru", "nul", "\"abc", "\"a\u{01}b\"", "\"\\x\"", "\"\\u12\"", "\"\\ud800\"", "\"\\udc00\"", "\"\\ud800\\u0041\"",
        "{} {}", "[1] x", "1e999",
    ])
    func refusesWhatIsNotJSON(_ text: String) {
        #expect(JSONReader.parse(Array(text.utf8)) == nil)
    }

    @Test func refusesInvalidUTF8InsideStrings() {
        #expect(JSONReader.parse([0x22, 0xFF, 0x22]) == nil)
        #expect(JSONReader.parse([0x22, 0xC3, 0xA9, 0x22]) == .string("é"))
    }

    @Test func capsNestingDepthInsteadOfOverflowingTheStack() {
        let deep = String(repeating: "[", count: 100_000) + String(repeating: "]", count: 100_000)
        #expect(JSONReader.parse(Array(deep.utf8)) == nil)
        let fine = String(repeating: "[", count: 60) + String(repeating: "]", count: 60)
        #expect(JSONReader.parse(Array(fine.utf8)) != nil)
    }

    /// Every proper prefix of a document that ends in a container fails; none crashes.
}
