import SQLiteStore
import StoreModel
import Testing

@testable import PushIngest

/// Issue 11, sweep: every number a push carries — `Content-Length`, Gorush's integers, order ids
/// and versions — over the same edge values, never a trap.
@Suite(.timeLimit(.minutes(3))) struct PushNumberBoundsTests {
    /// JSON edge values for numbers, with whether each is an integer within ±2^53.
    static let jsonNumbers: [(text: String, integer: Int64?)] = [
        ("-9223372036854775808", nil), ("9223372036854775807", nil), ("18446744073709551616", nil),
        ("1e308", nil), ("-1e308", nil), ("-0", 0), ("2.5", nil), ("9007199254740992", 9_007_199_254_740_992),
        ("9007199254740994", nil), ("1e19", nil), ("42", 42),
    ]

    @Test func gorushIntegersOutOfRangeAre400NotATrap() {
        for (text, integer) in Self.jsonNumbers {
            for field in ["platform", "badge"] {
                let body = #"{"notifications":[{"tokens":["t"],"\#(field)":\#(text)}]}"#
                let result = GorushRequest.parse(Array(body.utf8), maximumNotifications: 10)
                switch result {
                case .success(let request):
                    #expect(integer != nil, "\(field): \(text) was accepted")
                    let value = field == "platform" ? request.notifications.first?.platform : request.notifications.first?.badge
                    #expect(value.map(Int64.init) == integer)
                case .failure:
                    #expect(integer == nil, "\(field): \(text) was refused")
                }
            }
        }
    }

    private func notification(_ data: String) throws -> GorushNotification {
        let body = #"{"notifications":[{"tokens":["t"],"platform":2,"data":\#(data)}]}"#
        guard case .success(let request) = GorushRequest.parse(Array(body.utf8), maximumNotifications: 10),
              let first = request.notifications.first
        else { throw PushBoundsTestError() }
        return first
    }

    @Test func orderIDsAndVersionsOutOfRangeNeverTrapAndLoseNothing() throws {
        for (text, integer) in Self.jsonNumbers {
            // An id out of range is not an id: the push asks for a full sync rather than drop the hint.
            let byID = PushTranslator.jobs(for: try notification(#"{"type":"order.updated","order_id":\#(text)}"#), now: 0)
            if let integer {
                #expect(byID.map(\.kind) == [.fetch] && byID.first?.orderID == String(integer), "\(text)")
            } else {
                #expect(byID.map(\.kind) == [.fullSync], "\(text): \(byID)")
            }
            // A whole order whose version is out of range is not used as is: it becomes a fetch.
            let whole = PushTranslator.jobs(
                for: try notification(#"{"type":"order.updated","order":{"id":7,"status":"ready","version":\#(text)}}"#),
                now: 0)
            if let integer {
                #expect(whole.first?.kind == .upsert && whole.first?.order?.version == integer, "\(text)")
            } else {
                #expect(whole.map(\.kind) == [.fetch] && whole.first?.orderID == "7", "\(text): \(whole)")
            }
            // A version hint beside an id.
            let hinted = PushTranslator.jobs(
                for: try notification(#"{"type":"order.updated","order_id":"7","version":\#(text)}"#), now: 0)
            #expect(hinted.first?.version == integer, "\(text)")
        }
    }

    @Test func versionHintsAsTextAreStrict() throws {
        for (text, expected) in [("12", Int64?(12)), ("-9223372036854775809", nil), ("0x10", nil), (" 1", nil), ("", nil)] {
            let jobs = PushTranslator.jobs(
                for: try notification(#"{"type":"order.updated","order_id":"7","version":"\#(text)"}"#), now: 0)
            #expect(jobs.first?.version == expected, "\(text)")
        }
    }
}

struct PushBoundsTestError: Error {}
