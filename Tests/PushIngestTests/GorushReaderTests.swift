import Foundation
import JSONToolkit
import Testing

@testable import PushIngest

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
}
