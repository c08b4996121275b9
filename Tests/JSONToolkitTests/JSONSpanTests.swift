import JSONToolkit
import Testing

@Suite(.timeLimit(.minutes(3))) struct JSONSpanTests {
    @Test func findsTheExactTextOfAMember() {
        let text = #" { "a" : [1, {"order": 0}], "s":"}\"{", "order" : {"id": 1, "x": "a}b\"c", "n": [1,[2]]} , "z": null }"#
        #expect(JSONSpan.member("order", in: text) == #"{"id": 1, "x": "a}b\"c", "n": [1,[2]]}"#)
        #expect(JSONSpan.member("z", in: text) == "null")
        #expect(JSONSpan.member("a", in: text) == #"[1, {"order": 0}]"#)
        #expect(JSONSpan.member("missing", in: text) == nil)
        #expect(JSONSpan.member("order", in: "[]") == nil)
        #expect(JSONSpan.member("order", in: #"{"order": {"unterminated": "#) == nil)
    }
}

