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

    /// Where `read` stops on `text`, or nil when it fails.
    private static func stop(_ text: String, _ read: (inout JSONReader) throws(JSONReader.Failure) -> Void) -> Int? {
        Array(text.utf8).withUnsafeBufferPointer { buffer in
            var reader = JSONReader(buffer)
            do {
                try read(&reader)
                return reader.index
            } catch {
                return nil
            }
        }
    }

    static let documents = [
        #" {"a": [1, -2.5, 3e2], "b": {"c": null, "d": true, "e": false}, "s": "x\u00e9\ud83d\ude00"} tail"#,
        "[1,]", "{\"a\":1,}", "{\"a\" 1}", "01", "1.", "-", "1e", "tru", "\"abc", "\"a\u{01}b\"", "\"\\x\"",
        "\"\\ud800\"", "1e999", "[[[]]] x", "\"é\"", "  {\"id\": 1, \"status\": \"ok\"}", "[nulx]", "[trux]", "{\"a\": fals0}", "[1, \"\\u00zz\"]",
        String(repeating: "[", count: 64) + String(repeating: "]", count: 64),
        String(repeating: "[", count: 63) + String(repeating: "]", count: 63),
    ]

    /// skipValue is value(depth:) without building: it accepts and refuses the same documents, and
    /// stops at the same byte, prefix by prefix (the fuzzer's `orders` target checks it on any input).
    @Test(arguments: documents)
    func skippingAcceptsExactlyWhatReadingAccepts(_ document: String) {
        let bytes = Array(document.utf8)
        for end in 0...bytes.count {
            let text = String(decoding: bytes[..<end], as: UTF8.self)
            #expect(Self.stop(text) { (reader) throws(JSONReader.Failure) in try reader.skipValue(depth: 0) }
                        == Self.stop(text) { (reader) throws(JSONReader.Failure) in _ = try reader.value(depth: 0) },
                    "\(text)")
        }
    }

    @Test func invalidUTF8IsRefusedWhenSkippedToo() {
        let bytes: [UInt8] = [0x5B, 0x22, 0xFF, 0x22, 0x5D]
        bytes.withUnsafeBufferPointer { buffer in
            var reader = JSONReader(buffer)
            #expect(throws: JSONReader.Failure.self) { try reader.skipValue(depth: 0) }
        }
    }

    /// members(_:depth:) keeps the chosen members (the last of a repeated key, as value(depth:) keeps
    /// it), skips the rest, and still refuses a document that is broken where it skips.
    @Test func membersKeepsOnlyTheChosenOnes() throws {
        let text = #"{"id": 1, "items": [{"sku": "a", "n": [1, 2]}], "status": "old", "note": "x", "status": "new"} "#
        let fields: [String: JSONValue]? = Array(text.utf8).withUnsafeBufferPointer { buffer in
            var reader = JSONReader(buffer)
            return try? reader.members(["id", "status", "version"], depth: 0)
        }
        #expect(fields == ["id": .number(1), "status": .string("new")])
        #expect(Self.stop(#"{"id": 1, "items": [1, 2,]}"#) { (reader) throws(JSONReader.Failure) in
            _ = try reader.members(["id"], depth: 0)
        } == nil)
        var kept: [String: JSONValue]? = ["not": .null]
        let stop = Self.stop("[1, 2] x") { (reader) throws(JSONReader.Failure) in kept = try reader.members(["id"], depth: 0) }
        #expect(stop == 6 && kept == nil, "a value that is no object is passed over")
    }

    /// An object read with a shape accepts exactly what the whole read accepts, prefix by prefix, and
    /// builds only the shaped members: whole, or (for an object) only the chosen members of it; the
    /// kept text is the same. A member shaped by members whose value is no object is built whole.
    @Test(arguments: [
        #"{"type": "x", "order": {"id": 7, "items": [{"sku": "a"}], "status": "new"}, "version": 3, "note": {"a": [1, {}]}}"#,
        #"{"order": "not an object", "order_id": "9", "extra": [1, 2, {"b": null}]}"#,
        #"{"order": {"id": 1}, "order": {"id": 2, "status": "late"}, "trailing": [1, 2,]}"#,
        #" {"order_id": 1} x"#, #"{"a": 1e999}"#, #"{"order": {"id": "\ud800"}}"#,
    ])
    func aShapedObjectAcceptsWhatTheWholeReadAcceptsAndBuildsOnlyItsShape(_ document: String) {
        let shape: [String: JSONMemberShape] = ["order_id": .whole, "version": .whole, "order": .members(["id", "status"])]
        let bytes = Array(document.utf8)
        for end in 0...bytes.count {
            let prefix = Array(bytes[..<end])
            let whole = JSONObjectText(prefix, keepingTextOf: ["order"])
            let shaped = prefix.withUnsafeBufferPointer {
                JSONObjectText(buffer: $0, keepingTextOf: ["order"], building: shape)
            }
            #expect((whole == nil) == (shaped == nil), "\(String(decoding: prefix, as: UTF8.self))")
            guard let whole, let shaped else { continue }
            #expect(shaped.texts == whole.texts)
            var expected: [String: JSONValue] = [:]
            for (key, value) in whole.fields {
                switch shape[key] {
                case nil: continue
                case .whole?: expected[key] = value
                case .members(let names)?:
                    expected[key] = value.object.map { .object($0.filter { names.contains($0.key) }) } ?? value
                }
            }
            #expect(shaped.fields == expected)
        }
    }
}
