import CurlHTTP
import EventStream
import Foundation
import SQLiteStore
import StoreModel
import Sandbox
import TestKit
import TestHarnesses
import Testing

/// Issue 11, sweep: order records from the backend, and the Sandbox's own inputs, over the edge
/// values — a clear error or a clamp, never a trap.
@Suite(.timeLimit(.minutes(3))) struct OrderRecordBoundsTests {
    static let numbers: [(text: String, integer: Int64?)] = [
        ("-9223372036854775808", nil), ("9223372036854775807", nil), ("18446744073709551616", nil),
        ("1e308", nil), ("-0", 0), ("2.5", nil), ("9007199254740993", nil), ("9007199254740992", 9_007_199_254_740_992),
        ("true", nil),
    ]

    private func object(_ text: String) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
    }

    @Test func versionsOutOfRangeAreAParseErrorNamingTheOrder() throws {
        for (text, integer) in Self.numbers {
            let order = try object(#"{"id":7,"status":"ready","version":\#(text)}"#)
            if let integer {
                #expect(try OrderRecord.parse(order, appliedAt: 0).version == integer, "\(text)")
            } else {
                #expect(throws: OrderParseError("order 7 has a version that is not an integer within ±2^53"), "\(text)") {
                    try OrderRecord.parse(order, appliedAt: 0)
                }
            }
        }
        // A version sent as text is no version (DESIGN §3), as before.
        #expect(try OrderRecord.parse(try object(#"{"id":7,"status":"ready","version":"3"}"#), appliedAt: 0).version == nil)
    }

    @Test func idsOutOfRangeAreNoUsableID() throws {
        for (text, integer) in Self.numbers {
            for field in ["id", "store_id", "courier_id"] {
                let id = field == "id" ? text : "1"
                let order = try object(#"{"id":\#(id),"status":"ready","\#(field)":\#(text)}"#)
                if field == "id" {
                    if let integer {
                        #expect(try OrderRecord.parse(order, appliedAt: 0).id == String(integer))
                    } else {
                        #expect(throws: OrderParseError("the order has no usable id"), "\(text)") {
                            try OrderRecord.parse(order, appliedAt: 0)
                        }
                    }
                } else {
                    let record = try OrderRecord.parse(order, appliedAt: 0)
                    let value = field == "store_id" ? record.storeID : record.courierID
                    #expect(value == integer.map { String($0) }, "\(field): \(text)")
                }
            }
        }
    }
}

@Suite(.timeLimit(.minutes(3))) struct SandboxInputBoundsTests {
    @Test(arguments: [SandboxConfiguration.Feed.synthetic, .orderBook])
    func lastEventIDsAtTheEdgesResumeOrStartOverWithoutATrap(_ feed: SandboxConfiguration.Feed) async throws {
        let configuration = SandboxConfiguration(port: 0, eventInterval: .milliseconds(1), feed: feed, changesOrders: true)
        try await Sandbox.withRunning(configuration) { sandbox in
            let base = await sandbox.baseURL
            try await CurlLoop.withLoop(logger: quietLogger) { loop in
                for lastEventID in ["9223372036854775807", "-9223372036854775808", "18446744073709551616", "1e308",
                                    "-1", "0x10", " ", "NaN"] {
                    var events = 0
                    let source = EventSource(
                        configuration: EventSourceConfiguration(url: base + "/v1/events", lastEventID: lastEventID,
                                                                idleTimeout: nil),
                        loop: loop, clock: ManualClock(), random: { 1 }, logger: quietLogger)
                    _ = try await source.run { update in
                        if case .event = update {
                            events += 1
                            if events == 3 { source.stop() }
                        }
                    }
                    #expect(events == 3, "Last-Event-ID \(lastEventID)")
                }
            }
        }
    }

    @Test func controlParametersOutOfRangeAre400NamingThem() async throws {
        try await Sandbox.withRunning(SandboxConfiguration(port: 0, feed: .orderBook)) { sandbox in
            let base = await sandbox.baseURL
            try await CurlLoop.withLoop(logger: quietLogger) { loop in
                let cases = [
                    ("fetch?times=99999999999999999999", "times"), ("fetch?times=-1", "times"),
                    ("fetch?times=0x10", "times"), ("fetch?status=abc", "status"), ("fetch?status=-503", "status"),
                    ("slow-fetch?ms=-1", "ms"), ("slow-fetch?ms=1e308", "ms"),
                    ("drop-stream?after_bytes=-9223372036854775808", "after_bytes"),
                ]
                for (query, parameter) in cases {
                    let response = try await loop.perform(HTTPRequest(url: base + "/sandbox/faults/" + query, method: "POST"))
                    #expect(response.status == 400, "\(query)")
                    #expect(String(decoding: response.body, as: UTF8.self).contains(parameter), "\(query)")
                }
                let fine = try await loop.perform(HTTPRequest(url: base + "/sandbox/faults/fetch?times=2", method: "POST"))
                #expect(fine.status == 200)
            }
        }
    }
}

/// The same ICU crash was reachable from any order's `updated_at` (a push or the stream), when two
/// versions of an order are compared by time.
@Suite(.timeLimit(.minutes(3))) struct OrderFreshnessTimeTests {
    @Test func aLongFractionInUpdatedAtIsComparedNotACrash() {
        let long = "2030-01-01T00:00:00." + String(repeating: "9", count: 200) + "Z"
        let newer = OrderFreshness(version: nil, updatedAt: long)
        let older = OrderFreshness(version: nil, updatedAt: "2030-01-01T00:00:00.5Z")
        #expect(newer.isNewer(than: older))
        #expect(!older.isNewer(than: newer))
    }
}
