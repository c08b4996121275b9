import Foundation
import JSONToolkit
import Testing

@testable import PushIngest
import StoreModel

/// The Gorush request reader over the JSON toolkit's reader.
@Suite(.timeLimit(.minutes(3))) struct GorushReaderTests {
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

    /// `data` is read into its typed fields with a dictionary's rules: the last of a repeated key wins,
    /// a field of another type reads as absent (a version may be a decimal string), the order may be an object or a string, and what
    /// orderlive does not read is checked (a malformed value anywhere fails) but never kept.
    @Test func dataIsReadIntoItsTypedFieldsWithADictionarysRules() throws {
        func data(_ text: String) throws -> PushData? {
            let body = #"{"notifications":[{"tokens":["t"],"platform":2,"data":\#(text)}]}"#
            return try GorushRequest.parse(Array(body.utf8), maximumNotifications: 10).get().notifications[0].data
        }
        let typed = try data(#"{"type":"order.x","order_id":7,"version":3,"extra":{"a":[1,2,{"b":null}]},"type":"order.updated"}"#)
        #expect(typed == PushData(type: "order.updated", orderID: "7", version: 3))
        #expect(try data(#"{"type":5,"order_id":"","version":"x"}"#) == PushData())
        #expect(try data(#"{"version":"3"}"#)?.version == 3, "a decimal string is an integer hint, as before")
        #expect(try data(#"{"order":"{\"id\":4,\"status\":\"created\"}"}"#)?.order == .text(#"{"id":4,"status":"created"}"#))
        #expect(try data(#"{"order":[1]}"#)?.order == .other)
        guard case .object(let members, let text)? = try data(#"{"order":{"id":9, "status":"x","more":{}}}"#)?.order else {
            Issue.record("an order object was not kept as one")
            return
        }
        #expect(members.first??.identifier == "9" && text == #"{"id":9, "status":"x","more":{}}"#)
        for malformed in [#"{"extra":[1,}"#, #"{"order":{"id":1,}}"#, #""text""#, "7"] {
            let body = #"{"notifications":[{"tokens":["t"],"data":\#(malformed)}]}"#
            if case .success = GorushRequest.parse(Array(body.utf8), maximumNotifications: 10) {
                Issue.record("accepted data \(malformed)")
            }
        }
    }
}
