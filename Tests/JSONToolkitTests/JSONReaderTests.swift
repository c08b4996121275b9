import Foundation
import Testing

import JSONToolkit

@Suite(.timeLimit(.minutes(3))) struct JSONReaderTests {
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
        // ASCII is decoded without validation: one byte at or above 0x80 anywhere must still be checked.
        #expect(JSONReader.parse([0x22, 0x61, 0x62, 0x80, 0x22]) == nil)
        #expect(JSONReader.parse([0x22, 0x61, 0xC3, 0x22]) == nil)
        #expect(JSONReader.parse([0x22, 0xC0, 0xAF, 0x61, 0x22]) == nil, "an overlong encoding of '/'")
        #expect(JSONReader.parse([0x22, 0x61, 0xC3, 0xA9, 0x7A, 0x22]) == .string("aéz"))
        #expect(JSONReader.parse(Array(#""plain ascii ~""#.utf8)) == .string("plain ascii ~"))
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

    /// members(_:depth:) keeps the chosen members by their position (the last of a repeated key, as
    /// value(depth:) keeps it), skips the rest, and still refuses a document that is broken where it
    /// skips.
    @Test func membersKeepsOnlyTheChosenOnes() throws {
        let text = #"{"id": 1, "items": [{"sku": "a", "n": [1, 2]}], "status": "old", "note": "x", "status": "new"} "#
        let keys = JSONKeys(["id", "status", "version"])
        let members: [JSONValue?]? = Array(text.utf8).withUnsafeBufferPointer { buffer in
            var reader = JSONReader(buffer)
            return try? reader.members(keys, depth: 0)
        }
        #expect(members == [.number(1), .string("new"), nil])
        #expect(Self.stop(#"{"id": 1, "items": [1, 2,]}"#) { (reader) throws(JSONReader.Failure) in
            _ = try reader.members(JSONKeys(["id"]), depth: 0)
        } == nil)
        var kept: [JSONValue?]? = [.null]
        let stop = Self.stop("[1, 2] x") { (reader) throws(JSONReader.Failure) in kept = try reader.members(JSONKeys(["id"]), depth: 0) }
        #expect(stop == 6 && kept == nil, "a value that is no object is passed over")
    }

    /// Keys matched as bytes name the same members a String key names: escaped and non-ASCII keys
    /// included, and a key is refused exactly where string() refuses it, prefix by prefix.
    @Test(arguments: [
        #"{"id": 1, "\u0069d": 2, "st\u0061tus": "a", "ïd": 3, "id2": 4, "i": 5, "": 6} x"#,
        #"{"id\": 1}"#, #"{"\ud800": 1}"#, "{\"a\u{01}\": 1}", #"{"caf\u00e9": 1, "café": 2}"#,
        #"{"order": {"id": 7}, "version": 3, "note": {"a": [1, {}]}}"#,
    ])
    func keysMatchedAsBytesNameWhatStringKeysName(_ document: String) {
        let names = ["id", "status", "ïd", "", "café", "order"]
        let keys = JSONKeys(names)
        let bytes = Array(document.utf8)
        for end in 0...bytes.count {
            let prefix = Array(bytes[..<end])
            var byString: [String] = []
            var byPosition: [String] = []
            let stringStop = prefix.withUnsafeBufferPointer { buffer -> Int? in
                var reader = JSONReader(buffer)
                do {
                    try reader.object { (reader, key) throws(JSONReader.Failure) in
                        byString.append(names.contains(key) ? key : "-")
                        try reader.skipValue(depth: 1)
                    }
                    return reader.index
                } catch { return nil }
            }
            let positionStop = prefix.withUnsafeBufferPointer { buffer -> Int? in
                var reader = JSONReader(buffer)
                do {
                    try reader.object(keys) { (reader, position) throws(JSONReader.Failure) in
                        byPosition.append(position.map { names[$0] } ?? "-")
                        try reader.skipValue(depth: 1)
                    }
                    return reader.index
                } catch { return nil }
            }
            #expect(stringStop == positionStop, "\(String(decoding: prefix, as: UTF8.self))")
            if stringStop != nil { #expect(byString == byPosition, "\(String(decoding: prefix, as: UTF8.self))") }
        }
    }

    @Test func aKeyOfInvalidUTF8IsRefusedWhenMatchedAsBytesToo() {
        let bytes: [UInt8] = [0x7B, 0x22, 0x69, 0xFF, 0x22, 0x3A, 0x31, 0x7D]
        bytes.withUnsafeBufferPointer { buffer in
            var reader = JSONReader(buffer)
            #expect(throws: JSONReader.Failure.self) {
                try reader.object(JSONKeys(["i"])) { (reader, _) throws(JSONReader.Failure) in try reader.skipValue(depth: 1) }
            }
        }
    }
}

/// Numbers are read without `strtod` where that is exact (Clinger's fast path): every value must be
/// the one `strtod` gives, to the bit, on either side of each bound of that path.
@Suite(.timeLimit(.minutes(3))) struct JSONNumberTests {
    /// The value `strtod` gives (through `Double(String)`), as the reader used to read every number.
    private static func strtod(_ text: String) -> Double? { Double(text) }

    private static func read(_ text: String) -> Double? {
        guard case .number(let value)? = JSONReader.parse(Array(text.utf8)) else { return nil }
        return value
    }

    @Test(arguments: [
        "0", "-0", "0.0", "-0.0", "1", "-1", "4.35", "12.5", "0.1", "0.2", "0.3", "1e1", "1E+2", "1e-2", "-0.0e-1",
        "0.000123", "123456789012345", "1234567890123456", "999999999999999", "99999999999999.9", "0.999999999999999",
        "9007199254740991", "9007199254740992", "1e22", "1e23", "1.5e-22", "1.5e-23", "123456789012345e7",
        "123456789012345e8", "5e-324", "2.2250738585072014e-308", "1.7976931348623157e308", "1e308", "1e-400",
        "0.00000000000000000000001", "0.0000000000000000000001", "100000000000000000000000", "1e001", "1e0001",
        "3.141592653589793", "2.718281828459045", "1700000000.123", "-52.3702", "4.8952",
    ])
    func readsWhatStrtodReads(_ text: String) throws {
        let expected = try #require(Self.strtod(text))
        let value = try #require(Self.read(text), "\(text)")
        #expect(value.bitPattern == expected.bitPattern, "\(text): \(value) against \(expected)")
    }

    /// Random numbers of every shape the grammar allows: up to 20 digits, a point anywhere, an
    /// exponent of up to three digits either way, either sign.
    @Test func randomNumbersReadAsStrtodReadsThem() {
        var state: UInt64 = 0x5EED_0F_39
        func next(_ bound: Int) -> Int {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return Int((z ^ (z >> 31)) % UInt64(bound))
        }
        var mismatches: [String] = []
        for _ in 0..<200_000 {
            var text = next(2) == 0 ? "-" : ""
            let integerDigits = 1 + next(17)
            text += next(4) == 0 ? "0" : String(1 + next(9))
            if integerDigits > 1, !text.hasSuffix("0") {
                for _ in 1..<integerDigits { text += String(next(10)) }
            }
            if next(2) == 0 {
                text += "."
                for _ in 0...next(18) { text += String(next(10)) }
            }
            if next(3) == 0 {
                text += next(2) == 0 ? "e" : "E"
                text += ["", "+", "-"][next(3)]
                text += String(next(next(2) == 0 ? 30 : 400))
            }
            guard let expected = Self.strtod(text), expected.isFinite else { continue }
            if Self.read(text)?.bitPattern != expected.bitPattern { mismatches.append(text) }
        }
        #expect(mismatches.isEmpty, "\(mismatches.prefix(10))")
    }

    /// The rule the fast path must not skip: an integer part beyond 2^53 never reads as one within it.
    @Test func integersPastTwoToThe53StillReadAsBeyondIt() throws {
        let limit = 9_007_199_254_740_992.0
        #expect(Self.read("9007199254740992") == limit)
        #expect(try #require(Self.read("9007199254740993")) > limit)
        #expect(try #require(Self.read("-9007199254740993")) < -limit)
        #expect(try #require(Self.read("90071992547409920")) > limit)
    }
}
