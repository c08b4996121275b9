import Foundation
import Testing

@testable import PushIngest

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
    @Test func everyTruncationOfARequestIsRefused() {
        let body = Array(#"{"notifications":[{"tokens":["t"],"platform":2,"data":{"type":"order.created","order":{"id":"7","status":"created"}}}]}"#.utf8)
        for end in 0..<body.count {
            #expect(JSONReader.parse(Array(body[..<end])) == nil, "prefix of \(end) bytes")
            if case .success = GorushRequest.parse(Array(body[..<end]), maximumNotifications: 10) {
                Issue.record("a truncated body of \(end) bytes was accepted")
            }
        }
        #expect(JSONReader.parse(body) != nil)
    }

    @Test func keepsTheExactTextOfTheOrderObject() throws {
        let order = "{ \"status\" : \"picked_up\",\n \"id\": 12, \"note\": \"caf\\u00e9\", \"version\": 3 }"
        let body = #"{"notifications":[{"tokens":["t"],"platform":2,"data":{"type":"order.status_changed","order":\#(order)}}]}"#
        let request = try GorushRequest.parse(Array(body.utf8), maximumNotifications: 10).get()
        let jobs = PushTranslator.jobs(for: request.notifications[0], now: 5)
        #expect(jobs.count == 1)
        #expect(jobs.first?.order?.body == order)
        #expect(jobs.first?.order?.id == "12")
        #expect(jobs.first?.order?.status == "picked_up")
        #expect(jobs.first?.order?.version == 3)
    }

    @Test func typedFieldsOfTheWrongTypeFailAndNullsAreAbsent() throws {
        for bad in [#""tokens":"a""#, #""tokens":[1]"#, #""platform":1.5"#, #""badge":"2""#, #""title":3"#,
                    #""production":"true""#, #""data":[1]"#, #""notif_id":12"#] {
            let body = #"{"notifications":[{\#(bad)}]}"#
            guard case .failure = GorushRequest.parse(Array(body.utf8), maximumNotifications: 10) else {
                Issue.record("accepted \(bad)")
                continue
            }
        }
        let body = #"{"unknown":{"deep":[1,{"x":null}]},"notifications":[{"tokens":null,"platform":null,"data":null,"legacy":7}]}"#
        let request = try GorushRequest.parse(Array(body.utf8), maximumNotifications: 10).get()
        #expect(request.notifications[0].tokens == nil && request.notifications[0].platform == nil)
        #expect(request.notifications[0].data == nil)
    }
}
